"""Each persona on each page that shows stored knowledge: what the owner and the member see of the
vault, and what the outsider and the visitor do not (not the text, title, id or path of its
document), plus logging in and out and the navigation by role.

The real retrieval against Neo4j and FAISS is tests/integration/test_access.py; here the API and
the search page are checked to hand the retrieval the asker's scope."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client

from apps.accounts.roles import CURATOR
from apps.accounts.services import role_set
from apps.answers import search, views
from apps.answers.models import Answer
from apps.answers.scope import EVERY_COLLECTION
from apps.ingest.jobs import job_claim, job_create, job_finish
from apps.ingest.models import IngestJob
from apps.ingest.services import FileOutcome
from apps.ledger.content import document_content, document_subject
from apps.ledger.models import ChangeEntry
from apps.ledger.pages import HIDDEN_PROBLEM, report_for_reader
from apps.ledger.services import Change, entries_append
from apps.ledger.verify import Problem, Report
from tests.unit.accounts.conftest import INSIDERS, OUTSIDERS, PRIVATE, PUBLIC, Cast
from tests.unit.provenance.test_audit_pages import chunk, make_answer

pytestmark = pytest.mark.django_db

UPLOAD = "/curation/documents/upload/"
SECRET_TEXT = "The Nightjar protocol moves the archive to Llandudno at midnight."
SECRET_PATH = "plans/nightjar-protocol.txt"
SECRET_TITLE = "Nightjar Protocol"
SECRET_ID = "5" * 32
OPEN_TEXT = "The Journal of Moss Studies is published by the Bryological Society of Wales."


def secret_traces(content: str) -> list[str]:
    """Which of the private document's text, title, path and id a response holds."""
    traces = {"text": "Nightjar protocol", "title": SECRET_TITLE, "path": SECRET_PATH, "id": SECRET_ID}
    return [name for name, trace in traces.items() if trace in content]


# --- logging in and out, and the navigation -----------------------------------------------------------


def test_the_login_page_logs_in_and_the_logout_button_logs_out(cast: Cast) -> None:
    cast.owner.set_password("x")
    cast.owner.save()
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and 'name="username"' in page.content.decode()
    response = client.post("/accounts/login/", {"username": "owner", "password": "x"})
    assert response.status_code == 302 and response["Location"] == "/"
    home = client.get("/").content.decode()
    assert '<span class="username">owner</span>' in home and 'action="/accounts/logout/"' in home
    assert client.get("/accounts/logout/").status_code == 405  # logging out is a POST (with its CSRF token)
    assert client.post("/accounts/logout/")["Location"] == "/"
    assert 'href="/accounts/login/?next=/">Log in</a>' in client.get("/").content.decode()


def test_a_wrong_password_is_said_plainly(cast: Cast) -> None:
    cast.owner.set_password("x")
    cast.owner.save()
    response = Client().post("/accounts/login/", {"username": "owner", "password": "wrong"})
    assert response.status_code == 200 and "did not match" in response.content.decode()


def nav(client: Client) -> str:
    content = client.get("/").content.decode()
    return content[content.index("<nav>") : content.index("</nav>")]


def test_the_navigation_shows_each_role_its_pages(cast: Cast) -> None:
    visitor = nav(cast.client("visitor"))
    assert 'href="/">Search</a>' in visitor
    for hidden in ("Curation", "Audit", "Change log", "Admin"):
        assert f">{hidden}</a>" not in visitor
    auditor = nav(cast.client("outsider"))  # staff and auditor, not curator
    assert 'href="/audit/answers/">Audit</a>' in auditor and 'href="/audit/log/">Change log</a>' in auditor
    assert 'href="/admin/">Admin</a>' in auditor and ">Curation</a>" not in auditor
    admin = nav(cast.client("admin"))
    for shown in ("Curation", "Audit", "Change log", "Admin"):
        assert f">{shown}</a>" in admin
    assert ">Ingest</a>" not in admin  # uploads and jobs live under Curation


# --- the API and the search page hand the retrieval the asker's scope ---------------------------------


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The scope each question was asked over (the retrieval itself is not run)."""
    scopes: list[Any] = []

    def answer_ask(**kwargs: Any) -> dict[str, Any]:
        scopes.append(kwargs["collections"])
        return {
            "answer_id": str(Answer.objects.create(question=kwargs["question"], state="done", generate=False).id),
            "answer": "",
            "state": "done",
            "sources": [],
            "tokens": [],
            "timings_ms": {},
        }

    for module in (views, search):
        monkeypatch.setattr(module.services, "answer_ask", answer_ask)
        monkeypatch.setattr(module, "default_tools", lambda: None)
    return scopes


def ask_api(client: Client, collections: Any) -> int:
    body = {"question": "What does the Nightjar protocol move?", "generate": False}
    if collections is not None:
        body["collections"] = collections
    return int(client.post("/api/ask", body, content_type="application/json").status_code)


@pytest.mark.parametrize("persona", OUTSIDERS)
def test_outsiders_ask_over_what_they_can_read(cast: Cast, asked: list[Any], persona: str) -> None:
    client = cast.client(persona)
    for collections in ([PRIVATE], ["nowhere"], None, [PRIVATE, PUBLIC], "vault"):
        assert ask_api(client, collections) == 200
    refused = client.post("/ask/", {"question": "What does the Nightjar protocol move?", "collection": PRIVATE})
    assert f"{PRIVATE} is not a collection you may read." in refused.content.decode()  # the picker does not offer it
    client.post("/ask/", {"question": "What does the Nightjar protocol move?", "collection": ""})
    assert asked == [[], [], [PUBLIC], [PUBLIC], [], [PUBLIC]]


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_insiders_ask_over_the_vault(cast: Cast, asked: list[Any], persona: str) -> None:
    client = cast.client(persona)
    ask_api(client, [PRIVATE])
    ask_api(client, None)
    client.post("/ask/", {"question": "Where does the archive go?", "collection": PRIVATE})
    assert asked == [[PRIVATE], [PUBLIC, PRIVATE], [PRIVATE]]


def test_an_admin_asks_over_every_collection(cast: Cast, asked: list[Any]) -> None:
    client = cast.client("admin")
    ask_api(client, None)
    ask_api(client, ["anything"])
    assert asked == [EVERY_COLLECTION, ["anything"]]


# --- ingestion jobs ------------------------------------------------------------------------------------


@pytest.fixture
def jobs(cast: Cast) -> dict[str, IngestJob]:
    """A finished job per collection (a finished job lists its files' paths and document ids); the
    cast are curators too here, so the curation jobs pages differ between them by collections only."""
    for user in (cast.owner, cast.member, cast.outsider):
        role_set(username=user.username, role=CURATOR)
    made = {}
    for name, path, text, document_id in (
        (PRIVATE, SECRET_PATH, SECRET_TEXT, SECRET_ID),
        (PUBLIC, "moss.txt", OPEN_TEXT, "6" * 32),
    ):
        job = job_create(collection=name, uploads=[(path, text.encode())], enqueue=False, owner=cast.owner)
        job_claim(job_id=str(job.id))
        made[name] = job_finish(job_id=str(job.id), outcomes=[FileOutcome(path, "created", document_id, {"chunks": 1})])
    return made


VARYING = re.compile(rb'next=[^"]*|"X-CSRFToken": "[^"]*"|name="csrfmiddlewaretoken" value="[^"]*"')


def same_page(first: bytes, second: bytes) -> bool:
    """Two responses are the same but for the page's own address (in the "Log in" link) and the
    CSRF token (masked afresh for every response)."""
    return VARYING.sub(b"", first) == VARYING.sub(b"", second)


def listed_jobs(client: Client) -> set[str]:
    return set(re.findall(r'href="/curation/jobs/([0-9a-f-]{36})/"', client.get("/curation/jobs/").content.decode()))


@pytest.mark.parametrize("persona", INSIDERS)
def test_insiders_see_the_vaults_job(cast: Cast, jobs: dict[str, IngestJob], persona: str) -> None:
    client = cast.client(persona)
    assert listed_jobs(client) == {str(job.id) for job in jobs.values()}
    page = client.get(f"/curation/jobs/{jobs[PRIVATE].id}/")
    assert page.status_code == 200 and SECRET_PATH in page.content.decode()


def test_the_outsider_sees_only_the_commons_job(cast: Cast, jobs: dict[str, IngestJob]) -> None:
    client = cast.client("outsider")
    assert listed_jobs(client) == {str(jobs[PUBLIC].id)}
    assert client.get(f"/curation/jobs/{jobs[PUBLIC].id}/").status_code == 200
    hidden = client.get(f"/curation/jobs/{jobs[PRIVATE].id}/")
    missing = client.get("/curation/jobs/00000000-0000-0000-0000-000000000000/")
    assert hidden.status_code == missing.status_code == 404
    assert same_page(hidden.content, missing.content)
    assert not secret_traces(client.get("/curation/jobs/").content.decode())
    assert not secret_traces(client.get("/curation/documents/").content.decode())


def test_the_visitor_is_sent_to_log_in(cast: Cast, jobs: dict[str, IngestJob]) -> None:
    response = cast.client("visitor").get(f"/curation/jobs/{jobs[PRIVATE].id}/")
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_former_ingest_pages_redirect_to_curation(cast: Cast, jobs: dict[str, IngestJob]) -> None:
    client = cast.client("outsider")
    assert client.get("/ingest/")["Location"] == "/curation/documents/"
    moved = client.get(f"/ingest/jobs/{jobs[PRIVATE].id}/")
    assert moved.status_code == 302 and moved["Location"] == f"/curation/jobs/{jobs[PRIVATE].id}/"
    assert client.get(moved["Location"]).status_code == 404  # the page it leads to checks access
    assert client.post("/ingest/").status_code == 405  # an upload is never dropped on the way


def test_the_upload_picker_lists_only_readable_collections(cast: Cast, jobs: dict[str, IngestJob]) -> None:
    def options(persona: str) -> list[str]:
        page = cast.client(persona).get("/curation/documents/").content.decode()
        picker = page[
            page.index('id="upload_collection"') : page.index("</select>", page.index('id="upload_collection"'))
        ]
        return re.findall(r'<option value="([^"]*)"', picker)

    assert options("outsider") == ["", PUBLIC]
    assert options("member") == ["", PUBLIC, PRIVATE]


def test_uploads_go_into_new_or_readable_collections(cast: Cast, jobs: dict[str, IngestJob]) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = cast.client("outsider")
    refused = client.post(UPLOAD, {"files": [SimpleUploadedFile("x.txt", b"x")], "collection": PRIVATE})
    assert refused.status_code == 400 and "is not available to you" in refused.content.decode()
    assert IngestJob.objects.count() == 2
    created = client.post(UPLOAD, {"files": [SimpleUploadedFile("x.txt", b"x")], "collection": "field-notes"})
    assert created.status_code == 302
    job = IngestJob.objects.get(collection="field-notes")
    assert client.get(f"/curation/jobs/{job.id}/").status_code == 200  # the uploader owns the new collection
    named = client.post(
        UPLOAD, {"files": [SimpleUploadedFile("y.txt", b"y")], "collection": "", "new_collection": "log"}
    )
    assert named.status_code == 302 and IngestJob.objects.filter(collection="log").exists()
    unnamed = client.post(
        UPLOAD, {"files": [SimpleUploadedFile("y.txt", b"y")], "collection": "", "new_collection": ""}
    )
    assert unnamed.status_code == 400 and "Pick a collection, or name a new one." in unnamed.content.decode()
    bad = client.post(UPLOAD, {"files": [SimpleUploadedFile("x.txt", b"x")], "collection": "a/b"})
    assert bad.status_code == 400 and "cannot contain" in bad.content.decode()


# --- the answers' audit pages -----------------------------------------------------------------------


@pytest.fixture
def answers(cast: Cast) -> dict[str, Any]:
    secret = chunk(1, SECRET_PATH, SECRET_ID, [SECRET_TEXT], collection=PRIVATE)
    moss = chunk(1, "moss.txt", "6" * 32, [OPEN_TEXT], collection=PUBLIC)
    moss_seeded_by_vault = make_answer(question="Who publishes the journal?", sources=[moss])
    moss_seeded_by_vault.seeds = [{"id": "secret-chunk", "label": "Chunk", "score": 0.9, "collection": PRIVATE}]
    moss_seeded_by_vault.save()
    return {
        "vault": make_answer(question="Where does the archive go?", user=cast.owner, sources=[secret]),
        "commons": make_answer(question="Who publishes the journal?", user=cast.owner, sources=[moss]),
        "mixed": make_answer(question="Both?", sources=[moss, {**secret, "number": 2}]),
        "seeded": moss_seeded_by_vault,
    }


def listed_answers(client: Client) -> set[str]:
    return set(re.findall(r'href="/audit/answers/([0-9a-f-]{36})/"', client.get("/audit/answers/").content.decode()))


@pytest.mark.parametrize("persona", INSIDERS)
def test_insiders_audit_the_vaults_answers(cast: Cast, answers: dict[str, Any], persona: str) -> None:
    client = cast.client(persona)
    assert listed_answers(client) == {str(answer.id) for answer in answers.values()}
    page = client.get(f"/audit/answers/{answers['vault'].id}/").content.decode()
    assert secret_traces(page) == ["text", "path", "id"]  # the title is not part of a source
    assert SECRET_ID in client.get(f"/audit/answers/{answers['vault'].id}/export.json").content.decode()


def test_the_outsider_audits_only_answers_that_drew_on_the_commons_alone(cast: Cast, answers: dict[str, Any]) -> None:
    client = cast.client("outsider")
    assert listed_answers(client) == {str(answers["commons"].id)}
    assert not secret_traces(client.get("/audit/answers/").content.decode())
    assert "No answers match." in client.get("/audit/answers/", {"document": SECRET_ID}).content.decode()
    missing = "00000000-0000-0000-0000-000000000000"
    for name in ("vault", "mixed", "seeded"):
        answer_id = answers[name].id
        for suffix in ("", "export.json"):
            hidden = client.get(f"/audit/answers/{answer_id}/{suffix}")
            assert hidden.status_code == 404
            assert same_page(hidden.content, client.get(f"/audit/answers/{missing}/{suffix}").content)
        assert client.post(f"/audit/answers/{answer_id}/exact/").status_code == 404
    assert client.get(f"/audit/answers/{answers['commons'].id}/").status_code == 200


def test_the_scope_an_answer_was_asked_over_hides_collections_the_viewer_cannot_read(
    cast: Cast, answers: dict[str, Any]
) -> None:
    commons = answers["commons"]
    commons.collections = [PUBLIC, PRIVATE]
    commons.save()
    export = cast.client("outsider").get(f"/audit/answers/{commons.id}/export.json").json()
    assert export["collections"] == [PUBLIC]
    assert cast.client("owner").get(f"/audit/answers/{commons.id}/export.json").json()["collections"] == [
        PUBLIC,
        PRIVATE,
    ]
    page = cast.client("outsider").get(f"/audit/answers/{commons.id}/").content.decode()
    assert f"collections: {PUBLIC} ·" in page and PRIVATE not in page


# --- the change log ----------------------------------------------------------------------------------


def document_change(collection: str, path: str, title: str, document_id: str) -> Change:
    content = document_content(
        document={"id": document_id, "collection": collection, "path": path, "title": title, "sha256": "1" * 64},
        units=[("c" * 32, "2" * 64)],
    )
    subject = document_subject(collection=collection, path=path)
    return Change("document.ingested", "Document", subject, None, content, ref=document_id)


@pytest.fixture
def log(cast: Cast) -> dict[str, ChangeEntry]:
    with transaction.atomic():
        rows = entries_append(
            actor="system:ingest",
            changes=[
                document_change(PRIVATE, SECRET_PATH, SECRET_TITLE, SECRET_ID),
                document_change(PUBLIC, "moss.txt", "Moss", "6" * 32),
                document_change("VAULT", "shouting.txt", "Loud", "7" * 32),
            ],
        )
    return {"vault": rows[0], "commons": rows[1], "VAULT": rows[2]}


def listed_entries(client: Client, **query: str) -> set[int]:
    content = client.get("/audit/log/", query).content.decode()
    return {int(seq) for seq in re.findall(r'<td><a href="/audit/log/(\d+)/">', content)}


@pytest.mark.parametrize("persona", ["owner", "member"])
def test_vault_readers_see_its_entries(cast: Cast, log: dict[str, ChangeEntry], persona: str) -> None:
    client = cast.client(persona)
    assert listed_entries(client) == {log["vault"].seq, log["commons"].seq}  # "VAULT" is another collection
    page = client.get(f"/audit/log/{log['vault'].seq}/").content.decode()
    assert set(secret_traces(page)) == {"title", "path", "id"}
    assert client.get(f"/audit/log/{log['vault'].seq}/proof.json").status_code == 409  # not anchored yet


def test_the_outsider_sees_no_vault_entry(cast: Cast, log: dict[str, ChangeEntry]) -> None:
    client = cast.client("outsider")
    assert listed_entries(client) == {log["commons"].seq}
    assert listed_entries(client, subject="nightjar") == set()
    assert not secret_traces(client.get("/audit/log/", {"subject": "vault"}).content.decode())
    for suffix in ("", "proof.json"):
        hidden = client.get(f"/audit/log/{log['vault'].seq}/{suffix}")
        assert hidden.status_code == 404 and same_page(hidden.content, client.get(f"/audit/log/99/{suffix}").content)


def test_a_collection_differing_only_in_case_opens_nothing(cast: Cast, log: dict[str, ChangeEntry]) -> None:
    """SQLite's LIKE ignores case: "VAULT/…" must not open "vault/…" (the collection is compared exactly)."""
    from apps.accounts.services import collection_ensure

    collection_ensure(name="VAULT", public=True)
    client = cast.client("outsider")
    assert listed_entries(client) == {log["commons"].seq, log["VAULT"].seq}
    assert client.get(f"/audit/log/{log['vault'].seq}/").status_code == 404


def test_the_admin_sees_every_entry(cast: Cast, log: dict[str, ChangeEntry]) -> None:
    assert listed_entries(cast.client("admin")) == {row.seq for row in log.values()}


def test_verify_now_tells_problems_about_the_vault_without_their_details(
    cast: Cast, log: dict[str, ChangeEntry]
) -> None:
    report = Report(
        entries=3,
        problems=[
            Problem("entry", f"entry #{log['vault'].seq} no longer matches its leaf hash", seq=log["vault"].seq),
            Problem("graph", f"document {PRIVATE}/{SECRET_PATH} ({SECRET_ID}) is in the graph but not in the log"),
            Problem("graph", f"document {PUBLIC}/moss.txt differs from entry #{log['commons'].seq}", seq=1),
            Problem("chain", "the anchors could not be checked: connection refused"),
        ],
    )
    outsider = report_for_reader(report, [PUBLIC])
    assert [p.message for p in outsider.problems[:2]] == [HIDDEN_PROBLEM, HIDDEN_PROBLEM]
    assert [p.seq for p in outsider.problems] == [None, None, 1, None]
    assert outsider.problems[2:] == report.problems[2:]
    assert report_for_reader(report, None) is report
    assert report_for_reader(report, [PUBLIC, PRIVATE]).problems == report.problems
    assert isinstance(cast.owner, User)

"""The change-log audit pages: who may see them, the log with its filters and tree head, one
entry's diff and proof (and its bundle download), the anchors, "verify now" against a chain
or a graph that is down and a tampered row, the read-only admin, and the knowledge-log box of
an answer's audit page."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import neo4j.exceptions
import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django.utils.html import escape
from pytest_django.fixtures import Settings

from apps.graph import driver as graph_driver
from apps.ledger import merkle
from apps.ledger import services as ledger_services
from apps.ledger.canonical import ACTIONS, entry_bytes
from apps.ledger.content import document_content, entity_content, relation_content
from apps.ledger.models import Anchor, ChangeEntry
from apps.ledger.services import Change, entries_append, knowledge_stand, tree_head
from tests.support import free_port
from tests.unit.provenance.test_audit_pages import BIOGRAPHY_ID, INSTITUTE_ID, make_answer

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
CONTRACT = "0x" + "ab" * 20
TX_HASH = "0x" + "cd" * 32
BLOCK_HASH = "0x" + "ef" * 32
DOCUMENT_ID = "d" * 32


# --- data ------------------------------------------------------------------------------------


def rename(entity: str, old: str, new: str) -> Change:
    return Change(
        "entity.renamed",
        "Entity",
        entity,
        entity_content(entity_id=entity, name=old, type_="PERSON"),
        entity_content(entity_id=entity, name=new, type_="PERSON"),
    )


def document(units: list[tuple[str, str]], *, sha256: str = "1" * 64, size: int = 120) -> dict[str, Any]:
    properties = {"id": DOCUMENT_ID, "collection": "demo", "path": "curie.txt", "title": "Curie", "sha256": sha256}
    return document_content(document={**properties, "mime": "text/plain", "size": size}, units=units)


def append(changes: list[Change], actor: str = "curator:ana") -> list[ChangeEntry]:
    with transaction.atomic():
        return entries_append(actor=actor, changes=changes)


def renames(count: int) -> list[ChangeEntry]:
    return append([rename(f"e{i}", f"Old {i}", f"New {i}") for i in range(count)])


def confirmed_anchor(**fields: Any) -> Anchor:
    """A confirmed anchor of the log as it is now."""
    head = tree_head()
    values = {
        "tree_size": head.size,
        "root": head.root,
        "state": Anchor.CONFIRMED,
        "chain_id": 31337,
        "contract": CONTRACT,
        "tx_hash": TX_HASH,
        "block_number": 7,
        "block_hash": BLOCK_HASH,
        "confirmations": 3,
        **fields,
    }
    return Anchor.objects.create(**values)


def listed(response: Any) -> list[int]:
    return [int(seq) for seq in re.findall(r'<td><a href="/audit/log/(\d+)/">', response.content.decode())]


def diff_rows(content: str) -> dict[str, bool]:
    """Each field of the diff table and whether it is marked as changed."""
    return {key: css == "changed" for css, key in re.findall(r'<tr class="(\w*)" data-field="([^"]+)">', content)}


# --- personas ------------------------------------------------------------------------------


@pytest.fixture
def superuser(client: Client) -> Client:
    client.force_login(User.objects.create_superuser("root", password="x"))
    return client


@pytest.fixture
def dead_chain(settings: Settings) -> str:
    """A chain node URL that nothing answers on."""
    settings.CHAIN_RPC_URL = f"http://127.0.0.1:{free_port()}"
    return str(settings.CHAIN_RPC_URL)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Set the time the next entries are logged at."""

    def at(day: str) -> None:
        monkeypatch.setattr(ledger_services, "_now", lambda: f"{day}T12:00:00.000000Z")

    return at


GET_PAGES = ["/audit/log/", "/audit/log/1/", "/audit/log/1/proof.json", "/audit/anchors/"]


# --- access ----------------------------------------------------------------------------------


def test_visitors_are_sent_to_log_in(client: Client) -> None:
    renames(2)
    for url in GET_PAGES:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={url}"
    response = client.post("/audit/log/verify/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/audit/log/verify/"


def test_users_without_the_auditor_role_get_a_plain_403(outsider: Client) -> None:
    append([rename("e:secret", "Hidden", "Secret Person")])
    append([rename("e:other", "A", "B")])
    for response in [*(outsider.get(url) for url in GET_PAGES), outsider.post("/audit/log/verify/")]:
        assert response.status_code == 403
        content = response.content.decode()
        assert "needs the auditor role" in content and "otto" in content
        assert "e:secret" not in content and "Secret Person" not in content


@pytest.mark.parametrize("persona", ["auditor", "superuser"])
def test_auditors_and_superusers_see_every_page(persona: str, request: pytest.FixtureRequest, dead_chain: str) -> None:
    client: Client = request.getfixturevalue(persona)
    renames(2)
    confirmed_anchor()
    for url in GET_PAGES:
        assert client.get(url).status_code == 200, url
    assert client.post("/audit/log/verify/").status_code == 200
    assert client.get("/audit/log/9/").status_code == 404
    assert client.get("/audit/log/9/proof.json").status_code == 404


def test_the_navigation_links_the_change_log(auditor: Client) -> None:
    content = auditor.get("/audit/log/").content.decode()
    nav = content[content.index("<nav>") : content.index("</nav>")]
    assert 'href="/audit/answers/">Audit</a>' in nav and 'href="/audit/log/">Change log</a>' in nav


# --- the log ------------------------------------------------------------------------------------


def test_the_log_lists_newest_first_under_its_tree_head(auditor: Client) -> None:
    renames(3)
    anchor = confirmed_anchor()
    renames(2)
    response = auditor.get("/audit/log/")
    assert response.status_code == 200
    assert listed(response) == [4, 3, 2, 1, 0]
    content = response.content.decode()
    head = tree_head()
    assert f'<strong id="tree-size">{head.size}</strong>' in content and head.root in content
    assert f"size <strong>{anchor.tree_size}</strong>" in content and TX_HASH[:14] in content
    anchored = re.findall(r'<td><a href="/audit/log/(\d+)/">.*?<td class="\w*">(yes|not yet)</td>', content, re.S)
    assert anchored == [("4", "not yet"), ("3", "not yet"), ("2", "yes"), ("1", "yes"), ("0", "yes")]
    row = content[content.index('href="/audit/log/2/"') : content.index("</tr>", content.index('href="/audit/log/2/"'))]
    assert "curator:ana" in row and "entity.renamed" in row and "Entity <code>e2</code>" in row
    assert 'action="/audit/log/verify/"' in content and "csrfmiddlewaretoken" in content
    assert "also check the graph" in content


def test_only_confirmed_anchors_count(auditor: Client) -> None:
    renames(2)
    confirmed_anchor(state=Anchor.SENT)
    content = auditor.get("/audit/log/").content.decode()
    assert "none yet" in content and ">yes<" not in content


@pytest.fixture
def history(clock: Callable[[str], None]) -> None:
    clock("2024-03-01")
    append([Change("document.ingested", "Document", "demo/curie.txt", None, document([]), ref=DOCUMENT_ID)], "ingest")
    clock("2024-03-10")
    append([rename("e:curie", "Curie", "Marie Curie")])
    clock("2024-03-20")
    proposed, approved = (
        relation_content(source="e:curie", predicate="BORN_IN", target="e:warsaw", status=status)
        for status in ("proposed", "approved")
    )
    append([Change("relation.approved", "Relation", "e:curie|BORN_IN|e:warsaw", proposed, approved)], "curator:bo")
    append([rename("e:warsaw", "Warszawa", "Warsaw")])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"subject": "curie"}, [2, 1, 0]),
        ({"subject": "E:WARSAW"}, [3, 2]),
        ({"actor": "ana"}, [3, 1]),
        ({"actor": "curator:bo"}, [2]),
        ({"action": "entity.renamed"}, [3, 1]),
        ({"action": "document.ingested"}, [0]),
        ({"date_from": "2024-03-05", "date_to": "2024-03-10"}, [1]),
        ({"date_from": "2024-03-10"}, [3, 2, 1]),
        ({"date_to": "2024-03-01"}, [0]),
        ({"subject": "curie", "action": "entity.renamed", "actor": "ana"}, [1]),
        ({"subject": "nothing"}, []),
    ],
)
def test_the_log_filters(auditor: Client, history: None, query: dict[str, str], expected: list[int]) -> None:
    response = auditor.get("/audit/log/", query)
    assert response.status_code == 200
    assert listed(response) == expected


def test_a_wrong_date_or_action_is_reported_and_ignored(auditor: Client, history: None) -> None:
    response = auditor.get("/audit/log/", {"date_from": "2024-13-45", "action": "entity.teleported", "actor": "bo"})
    assert response.status_code == 200
    content = response.content.decode()
    assert "Enter a valid date." in content and "Select a valid choice." in content
    assert listed(response) == [2]
    options = re.findall(r'<option value="([^"]*)"', content)
    assert options[0] == "" and "relation.approved" in options and options[1:] == sorted(ACTIONS)


def test_the_log_pages_by_fifty_and_keeps_its_filters(auditor: Client) -> None:
    renames(51)
    first = auditor.get("/audit/log/", {"action": "entity.renamed"})
    assert listed(first) == list(range(50, 0, -1))
    assert 'href="?action=entity.renamed&amp;page=2"' in first.content.decode()
    assert listed(auditor.get("/audit/log/", {"action": "entity.renamed", "page": "2"})) == [0]


# --- one entry ----------------------------------------------------------------------------------


def test_the_entry_page_shows_its_fields_canonical_form_and_diff(auditor: Client) -> None:
    append([rename("e:curie", "Curie", "Marie Curie")])
    renames(1)
    append([rename("e:curie", "Marie Curie", "Maria Skłodowska-Curie")])
    row = ChangeEntry.objects.get(seq=2)
    response = auditor.get("/audit/log/2/")
    assert response.status_code == 200
    content = response.content.decode()
    assert escape(entry_bytes(row.entry()).decode()) in content
    assert row.leaf_hash in content and "matches the entry's fields" in content
    assert f"{row.before}</code>" in content and f"{row.after}</code>" in content
    assert diff_rows(content) == {"kind": False, "id": False, "name": True, "type": False}
    name = content[content.index('data-field="name"') : content.index("</tr>", content.index('data-field="name"'))]
    assert "<td>Marie Curie</td>" in name and "<td>Maria Skłodowska-Curie" in name
    assert 'href="/audit/log/0/" rel="prev"' in content and 'rel="next"' not in content  # #1 is another subject
    assert 'href="/audit/log/?subject=e%3Acurie"' in content and "what changed this subject?" in content
    assert "answers that used this document" not in content
    assert 'href="/audit/log/2/" rel="next"' in auditor.get("/audit/log/0/").content.decode()


def test_an_entry_that_creates_or_removes_shows_one_side(auditor: Client) -> None:
    entity = entity_content(entity_id="e:new", name="New", type_="PLACE")
    append(
        [
            Change("entity.created", "Entity", "e:new", None, entity),
            Change("entity.deleted", "Entity", "e:new", entity, None),
        ]
    )
    created = auditor.get("/audit/log/0/").content.decode()
    assert "did not exist" in created and diff_rows(created) == dict.fromkeys(("kind", "id", "name", "type"), True)
    deleted = auditor.get("/audit/log/1/").content.decode()
    assert "no longer exists" in deleted and "<td>New</td>" in deleted


def test_a_document_entry_summarises_its_units(auditor: Client) -> None:
    old = document([("c1", "a" * 64), ("c2", "b" * 64), ("c3", "c" * 64)])
    new = document([("c1", "a" * 64), ("c2", "B" * 64), ("c4", "d" * 64)], sha256="2" * 64, size=130)
    append([Change("document.ingested", "Document", "demo/curie.txt", None, old, ref=DOCUMENT_ID)])
    append([Change("document.updated", "Document", "demo/curie.txt", old, new, ref=DOCUMENT_ID)])
    content = auditor.get("/audit/log/1/").content.decode()
    rows = diff_rows(content)
    assert rows["units"] and rows["sha256"] and rows["size"]
    assert not rows["title"] and not rows["path"] and not rows["id"]
    units = content[content.index('data-field="units"') : content.index("</tr>", content.index('data-field="units"'))]
    assert units.count("<td>3 units</td>") == 1 and "3 units\n" in units  # counts, not the lists
    assert (
        "added: <code>c4</code>" in units
        and "removed: <code>c3</code>" in units
        and "changed: <code>c2</code>" in units
    )
    assert "a" * 64 not in content
    assert f'href="/audit/answers/?document={DOCUMENT_ID}">answers that used this document' in content
    assert 'href="/audit/log/?subject=demo/curie.txt"' in content


def test_subject_and_actor_text_stays_text(auditor: Client) -> None:
    subject = f"e:{SCRIPT}"
    append([rename(subject, SCRIPT, "Safe")], actor=f"curator:{SCRIPT}")
    for url in ("/audit/log/", "/audit/log/0/", "/audit/log/?subject=script"):
        content = auditor.get(url).content.decode()
        assert SCRIPT not in content, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content, url
        assert all(" src=" in tag for tag in re.findall(r"<script[^>]*>", content))


# --- proofs --------------------------------------------------------------------------------------


def test_the_proof_is_a_409_until_anchored_then_a_bundle_that_verifies(auditor: Client) -> None:
    rows = renames(5)
    response = auditor.get("/audit/log/2/proof.json")
    assert response.status_code == 409
    assert "entry #2 is not anchored yet" in response.json()["error"]
    page = auditor.get("/audit/log/2/").content.decode()
    assert 'id="proof-error"' in page and "entry #2 is not anchored yet" in page
    assert 'href="/audit/log/2/proof.json"' not in page

    anchor = confirmed_anchor()
    response = auditor.get("/audit/log/2/proof.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="ragkg-proof-2.json"'
    bundle = response.json()
    assert bundle["format"] == "ragkg-ledger-proof/1"
    assert (bundle["leaf_index"], bundle["tree_size"], bundle["root"]) == (2, 5, anchor.root)
    assert base64.b64decode(bundle["entry"]) == entry_bytes(rows[2].entry())
    assert bundle["leaf_hash"] == rows[2].leaf_hash
    assert bundle["anchor"] == {
        "chain_id": 31337,
        "contract": CONTRACT,
        "tx_hash": TX_HASH,
        "block_number": 7,
        "block_hash": BLOCK_HASH,
    }
    path = [bytes.fromhex(node) for node in bundle["inclusion_path"]]
    assert merkle.verify_inclusion(bytes.fromhex(bundle["leaf_hash"]), 2, 5, path, bytes.fromhex(anchor.root))

    page = auditor.get("/audit/log/2/").content.decode()
    assert 'href="/audit/log/2/proof.json" download' in page
    inclusion = re.findall(r"<li>([0-9a-f]{64})</li>", page)
    assert inclusion == bundle["inclusion_path"] and len(inclusion) == 3
    assert CONTRACT in page and TX_HASH in page and BLOCK_HASH in page
    assert "<tr><th>Confirmations</th><td>3</td></tr>" in page


def test_the_anchors_page_lists_every_anchor(auditor: Client) -> None:
    renames(2)
    confirmed_anchor()
    renames(1)
    head = tree_head()
    Anchor.objects.create(
        tree_size=head.size, root=head.root, chain_id=31337, contract=CONTRACT, attempts=4, error="the chain is down"
    )
    content = auditor.get("/audit/anchors/").content.decode()
    rows = re.findall(r"<tr>\s*<td>(\d+)</td>.*?</tr>", content, re.S)
    assert rows == ["3", "2"]
    assert head.root[:16] in content and TX_HASH in content and "the chain is down" in content
    assert ">queued<" in content and ">confirmed<" in content and "<td>4</td>" in content


def test_the_answers_page_shows_the_knowledge_log(auditor: Client) -> None:
    biography = document([("c1", "a" * 64)]) | {"id": BIOGRAPHY_ID, "path": "curie/biography.txt"}
    append([Change("document.ingested", "Document", "demo/curie/biography.txt", None, biography, ref=BIOGRAPHY_ID)])
    renames(2)
    answer = make_answer()
    answer.ledger = knowledge_stand(document_ids=[BIOGRAPHY_ID, INSTITUTE_ID])
    answer.save(update_fields=["ledger"])
    content = auditor.get(f"/audit/answers/{answer.id}/").content.decode()
    box = content[
        content.index('<aside class="knowledge-log"') : content.index("</aside>", content.index("knowledge-log"))
    ]
    assert "tree size <strong>3</strong>" in box
    assert 'curie/biography.txt:\n      <a href="/audit/log/0/">entry #0</a>' in box
    assert "radium/institute.txt:\n      no entry in the log" in box

    older = make_answer()
    content = auditor.get(f"/audit/answers/{older.id}/").content.decode()
    assert "Knowledge log" in content and "older than the log" in content


# --- verify now --------------------------------------------------------------------------------


def test_verify_now_on_an_honest_log_is_ok(auditor: Client, dead_chain: str) -> None:
    renames(3)
    response = auditor.post("/audit/log/verify/")
    assert response.status_code == 200
    content = response.content.decode()
    assert re.search(r'<p class="ok" role="status" id="verdict"><strong>OK</strong>', content)
    assert "<tr><th>Entries</th><td>3</td></tr>" in content and tree_head().root in content
    assert "<tr><th>Graph</th><td>not checked</td></tr>" in content


def test_verify_now_names_a_chain_that_cannot_be_reached(auditor: Client, dead_chain: str) -> None:
    renames(3)
    confirmed_anchor()
    response = auditor.post("/audit/log/verify/")
    assert response.status_code == 200
    content = response.content.decode()
    message = f"the anchors could not be checked: the chain at {dead_chain} is unreachable"
    verdict = content[content.index('id="verdict"') : content.index("</p>", content.index('id="verdict"'))]
    assert "1 problem" in verdict and message in verdict
    assert "Traceback" not in content


def test_verify_now_needs_no_signing_key_and_never_shows_the_rpc_secret(auditor: Client, settings: Settings) -> None:
    settings.CHAIN_RPC_URL = f"http://127.0.0.1:{free_port()}/v3/secret-api-key"
    settings.CHAIN_PRIVATE_KEY = settings.CHAIN_PRIVATE_KEY_FILE = ""
    settings.MANAGED_SERVICES = []
    renames(1)
    confirmed_anchor(tree_size=1, root=tree_head().root)
    content = auditor.post("/audit/log/verify/").content.decode()
    assert "the anchors could not be checked" in content and "unreachable" in content
    assert "CHAIN_PRIVATE_KEY" not in content
    assert "secret-api-key" not in content


def test_verify_now_names_the_tampered_entry(auditor: Client, dead_chain: str) -> None:
    renames(4)
    with connection.cursor() as cursor:  # an attacker with database access (maintenance: the trigger is off)
        cursor.execute("UPDATE ledger_changeentry SET actor = 'mallory' WHERE seq = 1")
    response = auditor.post("/audit/log/verify/")
    assert response.status_code == 200
    content = response.content.decode()
    verdict = content[content.index('id="verdict"') : content.index("</p>", content.index('id="verdict"'))]
    assert "entry #1 no longer matches its leaf hash" in verdict and 'href="/audit/log/1/">entry #1</a>' in verdict
    assert '<li class="first down">entry: entry #1 no longer matches' in content
    assert "does not match the entry's fields" in auditor.get("/audit/log/1/").content.decode()


def test_an_entry_without_canonical_form_is_named_not_a_500(auditor: Client, dead_chain: str) -> None:
    renames(3)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE ledger_changeentry SET action = 'entity.teleported' WHERE seq = 1")
    confirmed_anchor(tree_size=3, root="0" * 64)
    content = auditor.post("/audit/log/verify/").content.decode()
    assert "entry #1 has no canonical form (unknown action &#x27;entity.teleported&#x27;)" in content
    page = auditor.get("/audit/log/1/")
    assert page.status_code == 200 and "the row was changed" in page.content.decode()
    proof = auditor.get("/audit/log/1/proof.json")
    assert proof.status_code == 409 and "entry #1 was changed" in proof.json()["error"]


class DownGraph:
    """A driver whose Neo4j is down."""

    def execute_query(self, *args: Any, **kwargs: Any) -> Any:
        raise neo4j.exceptions.ServiceUnavailable("Couldn't connect to 127.0.0.1:7687")


def test_verify_now_says_when_the_graph_is_down(
    auditor: Client, dead_chain: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    renames(2)
    monkeypatch.setattr(graph_driver, "get_driver", lambda: DownGraph())
    response = auditor.post("/audit/log/verify/", {"graph": "on"})
    assert response.status_code == 200
    content = response.content.decode()
    assert "the knowledge graph is unavailable: the graph was not checked" in content
    assert "<tr><th>Entries</th><td>2</td></tr>" in content  # the rest of the report is there
    assert 'name="graph" id="id_graph" checked' in content


def test_verify_now_is_post_only(auditor: Client) -> None:
    assert auditor.get("/audit/log/verify/").status_code == 405


# --- admin ------------------------------------------------------------------------------------


def test_the_admin_shows_the_log_read_only(superuser: Client) -> None:
    append([rename("e:curie", "Curie", "Marie Curie")], actor="curator:ana")
    confirmed_anchor()
    for model in ("changeentry", "snapshot", "anchor", "deployment", "graphchange"):
        assert superuser.get(f"/admin/ledger/{model}/").status_code == 200, model
        assert superuser.get(f"/admin/ledger/{model}/add/").status_code == 403, model
    listing = superuser.get("/admin/ledger/changeentry/", {"q": "curie"}).content.decode()
    assert "e:curie" in listing and 'name="action"' not in listing  # no bulk delete action
    change = superuser.get("/admin/ledger/changeentry/0/change/")
    assert change.status_code == 200 and 'type="submit" value="Save"' not in change.content.decode()
    assert superuser.post("/admin/ledger/changeentry/0/delete/").status_code == 403
    assert ChangeEntry.objects.count() == 1

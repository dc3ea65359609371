"""Who sees the private document, against the real Neo4j, FAISS indexes and models.

Two collections: "commons" (public) holds the journal page and a note on Gwendolyn Pryce's
orchids; "vault" (private, owned by "owner", granted to the group "team" of "member") holds the
committee minutes, the only place that says who founded the society and when. The question needs
both hops (journal -> society -> its first president), so graph expansion from the public journal
reaches the minutes unless the collection predicate stops it; and the minutes alone relate the
society to Gwendolyn Pryce (RELATED edges), a link an outsider's graph paths must never cross even
though both ends are named in public documents.

Personas: owner, member, outsider (no grant), visitor (anonymous); owner, member and outsider are
staff and auditors, so only their collections differ. For the API (plain and streamed), the search
page, the answer's sources and graph paths, the answers' audit pages, the change log and the
ingestion jobs: insiders see the minutes' text, title, id and path; outsiders see none of them, and
an outsider asking the vault gets exactly what asking a collection that does not exist gives.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.accounts.roles import AUDITOR, CURATOR
from apps.accounts.services import collection_grant, group_member_set, role_set
from apps.answers.models import Answer
from apps.answers.services import NOTHING_FOUND
from apps.ingest.jobs import job_claim, job_create, job_run
from apps.ingest.models import Document, IngestJob
from apps.ingest.services import default_extractor
from apps.ledger.models import ChangeEntry
from apps.vectors.registry import vector_registry_reset
from tests.support import queue_purge

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PUBLIC, PRIVATE = "commons", "vault"
JOURNAL = "The Journal of Moss Studies is published by the Bryological Society of Wales."
ORCHIDS = "Gwendolyn Pryce grew orchids in her greenhouse at Aberystwyth."
MINUTES_PATH = "minutes/nightjar-committee.txt"
MINUTES = (
    "Minutes of the Nightjar Committee\n\n"
    "Gwendolyn Pryce founded the Bryological Society of Wales in 1912. She was its first president."
)
QUESTION = "Who was the first president of the society that publishes the Journal of Moss Studies?"
INSIDERS = ("owner", "member")
OUTSIDERS = ("outsider", "visitor")
VARYING = re.compile(r'"X-CSRFToken": "[^"]*"|name="csrfmiddlewaretoken" value="[^"]*"|next=[^"]*')


@dataclass(frozen=True)
class World:
    """The ingested collections, the private document's traces, and a client per persona."""

    minutes: Document
    vault_units: frozenset[str]
    jobs: dict[str, IngestJob]

    def traces(self) -> dict[str, str]:
        """What must not reach an outsider: the minutes' words, title, id and path."""
        return {
            "text": "Society of Wales in 1912",
            "title": self.minutes.title,
            "id": self.minutes.id,
            "path": self.minutes.path,
        }

    def leaks(self, body: str) -> list[str]:
        """Which traces of the private document (its units' ids included) ``body`` holds."""
        found = [name for name, trace in self.traces().items() if trace in body]
        return found + [f"unit {unit}" for unit in sorted(self.vault_units) if unit in body]


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Iterator[Path]:
    settings.VECTORS_DIR = tmp_path / "vectors"
    vector_registry_reset()
    yield Path(settings.VECTORS_DIR)
    vector_registry_reset()


def ingest(driver: Driver, collection: str, files: dict[str, str], **options: Any) -> IngestJob:
    """A job created as the upload page creates it, run here (the real worker has its own database)."""
    job = job_create(
        collection=collection, uploads=[(n, t.encode()) for n, t in files.items()], enqueue=False, **options
    )
    assert job_claim(job_id=str(job.id))
    done = job_run(job_id=str(job.id), driver=driver, extractor=default_extractor())
    assert done.state == IngestJob.DONE, done.error
    return done


@pytest.fixture
def people() -> dict[str, User]:
    people = {name: User.objects.create_user(name, is_staff=True) for name in ("owner", "member", "outsider")}
    people["admin"] = User.objects.create_superuser("root")
    for name in ("owner", "member", "outsider"):
        role_set(username=name, role=AUDITOR)
    return people


@pytest.fixture
def world(empty_graph: Driver, people: dict[str, User]) -> World:
    jobs = {
        PUBLIC: ingest(empty_graph, PUBLIC, {"journal.txt": JOURNAL, "orchids.txt": ORCHIDS}, public=True),
        PRIVATE: ingest(empty_graph, PRIVATE, {MINUTES_PATH: MINUTES}, owner=people["owner"]),
    }
    collection_grant(collection=PRIVATE, group="team")
    group_member_set(username="member", group="team")
    minutes = Document.objects.get(collection=PRIVATE)
    records, _, _ = empty_graph.execute_query(
        "MATCH (u) WHERE u.document_id = $id RETURN collect(u.id) AS ids", id=minutes.id
    )
    return World(minutes=minutes, vault_units=frozenset(records[0]["ids"]), jobs=jobs)


def client(people: dict[str, User], persona: str) -> Client:
    browser = Client()
    if persona != "visitor":
        browser.force_login(people[persona])
    return browser


def ask(browser: Client, **body: Any) -> Any:
    return browser.post("/api/ask", json.dumps({"question": QUESTION, **body}), content_type="application/json")


def related_hops(result: dict[str, Any]) -> set[tuple[str, str]]:
    """The entity pairs the answer's graph paths cross over RELATED edges."""
    hops = set()
    for source in result["sources"]:
        for path in source["path_details"]:
            for i, relationship in enumerate(path["relationships"]):
                if relationship == "RELATED":
                    hops.add((path["nodes"][i], path["nodes"][i + 1]))
    return hops


def hop_documents(driver: Driver, hops: set[tuple[str, str]]) -> set[str]:
    """The collections of the documents that support the RELATED edges between those pairs."""
    records, _, _ = driver.execute_query(
        """
        UNWIND $pairs AS pair
        MATCH (:Entity {id: pair[0]})-[ev:EVIDENCE]-(:Entity {id: pair[1]})
        RETURN collect(DISTINCT ev.collection) AS collections
        """,
        pairs=[list(pair) for pair in hops],
    )
    return set(records[0]["collections"])


# --- the API, the answer's sources and its graph paths ---------------------------------------------


@pytest.mark.parametrize("persona", INSIDERS)
def test_insiders_are_answered_from_the_minutes(world: World, people: dict[str, User], persona: str) -> None:
    result = ask(client(people, persona), generate=False).json()
    documents = {source["document_id"] for source in result["sources"]}
    assert world.minutes.id in documents
    assert "Society of Wales in 1912" in json.dumps(result)


@pytest.mark.parametrize("persona", OUTSIDERS)
def test_outsiders_never_see_the_minutes_in_an_answer(
    world: World, people: dict[str, User], empty_graph: Driver, persona: str
) -> None:
    vault_only, _, _ = empty_graph.execute_query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity)"
        " WHERE COLLECT { MATCH (a)-[ev:EVIDENCE {predicate: r.predicate}]->(b) RETURN ev.document } = [$id]"
        " RETURN count(r) AS n",
        id=world.minutes.id,
    )
    assert vault_only[0]["n"] > 0, "the minutes relate entities that public documents name"
    browser = client(people, persona)
    bodies: list[dict[str, Any]] = [{}, {"collections": [PUBLIC, PRIVATE]}, {"mode": "dense"}]
    for body in bodies:
        response = ask(browser, generate=False, **body)
        assert response.status_code == 200
        result = response.json()
        assert result["sources"], "the commons still answer"
        assert {source["collection"] for source in result["sources"]} == {PUBLIC}
        assert world.leaks(response.content.decode()) == []
        nodes = {node for source in result["sources"] for path in source["paths"] for node in path}
        assert not nodes & world.vault_units
        # A RELATED edge only the minutes support is never crossed (it would tell what they say).
        assert hop_documents(empty_graph, related_hops(result)) <= {PUBLIC}
    streamed = ask(browser, generate=False, stream=True)
    events = b"".join(streamed.streaming_content).decode()
    assert events.count('"event"') == 2 and world.leaks(events) == []


def test_the_admin_reads_everything(world: World, people: dict[str, User]) -> None:
    result = ask(client(people, "admin"), generate=False).json()
    assert world.minutes.id in {source["document_id"] for source in result["sources"]}


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """An answer without what differs between any two askings (its id, its timings)."""
    return {key: value for key, value in result.items() if key not in ("answer_id", "timings_ms")}


@pytest.mark.parametrize("persona", OUTSIDERS)
def test_asking_the_vault_is_asking_a_collection_that_does_not_exist(
    world: World, people: dict[str, User], settings: Settings, persona: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ANSWER_GENERATION_QUEUE = "gpu-nobody-consumes"  # a queued generation would fail differently
    monkeypatch.setattr("apps.answers.admission.queue_unserved", lambda queue: False)  # as if a worker were there
    settings.ANSWER_QUEUE_TIMEOUT = 1.0
    queue_purge(settings.ANSWER_GENERATION_QUEUE)
    browser = client(people, persona)
    vault, nowhere = ask(browser, collections=[PRIVATE]), ask(browser, collections=["no-such-collection"])
    assert vault.status_code == nowhere.status_code == 200
    assert comparable(vault.json()) == comparable(nowhere.json())
    result = vault.json()
    assert result["sources"] == [] and result["state"] == "not_found" and result["reason"] == NOTHING_FOUND
    assert set(vault.json()["timings_ms"]) == set(nowhere.json()["timings_ms"])
    # The search form's picker offers only readable collections; a crafted form naming the private one is
    # refused in the words a missing one gets, and nothing is asked.
    asked_before = Answer.objects.count()
    pages = [
        browser.post("/ask/", {"question": QUESTION, "collection": name}).content.decode()
        for name in (PRIVATE, "no-such-collection")
    ]
    shown = [
        VARYING.sub("", page.replace(name, "NAME"))
        for page, name in zip(pages, (PRIVATE, "no-such-collection"), strict=True)
    ]
    assert shown[0] == shown[1] and "NAME is not a collection you may read." in shown[0]
    assert Answer.objects.count() == asked_before


# --- the search page --------------------------------------------------------------------------------


@pytest.mark.parametrize("persona", [*INSIDERS, *OUTSIDERS])
def test_the_search_page(world: World, people: dict[str, User], persona: str) -> None:
    page = client(people, persona).post("/ask/", {"question": QUESTION, "evidence_only": "on"}).content.decode()
    assert "journal.<wbr>txt" in page  # (file names wrap after their separators)
    if persona in INSIDERS:
        assert "Society of Wales in 1912" in page and world.minutes.path in page
    else:
        assert world.leaks(page) == []


# --- the answers' audit pages -------------------------------------------------------------------------


def listed_answers(browser: Client) -> set[str]:
    return set(re.findall(r'href="/audit/answers/([0-9a-f-]{36})/"', browser.get("/audit/answers/").content.decode()))


def test_the_audit_pages(world: World, people: dict[str, User]) -> None:
    from_vault = ask(client(people, "owner"), generate=False).json()["answer_id"]
    from_commons = ask(client(people, "outsider"), generate=False).json()["answer_id"]
    for persona in INSIDERS:
        browser = client(people, persona)
        assert listed_answers(browser) == {from_vault, from_commons}
        page = browser.get(f"/audit/answers/{from_vault}/").content.decode()
        assert "Society of Wales in 1912" in page and world.minutes.id in page and world.minutes.path in page
        assert world.minutes.id in browser.get(f"/audit/answers/{from_vault}/export.json").content.decode()
    outsider = client(people, "outsider")
    assert listed_answers(outsider) == {from_commons}
    assert world.leaks(outsider.get("/audit/answers/").content.decode()) == []
    for url in (f"/audit/answers/{from_vault}/", f"/audit/answers/{from_vault}/export.json"):
        assert outsider.get(url).status_code == 404
    commons_page = outsider.get(f"/audit/answers/{from_commons}/")
    assert commons_page.status_code == 200 and world.leaks(commons_page.content.decode()) == []
    visitor = client(people, "visitor").get(f"/audit/answers/{from_vault}/")
    assert visitor.status_code == 302 and visitor["Location"].startswith("/accounts/login/")


# --- the change log ----------------------------------------------------------------------------------------


def test_the_change_log(world: World, people: dict[str, User]) -> None:
    minutes = ChangeEntry.objects.get(subject_id=f"{PRIVATE}/{MINUTES_PATH}")
    for persona in INSIDERS:
        browser = client(people, persona)
        assert f'href="/audit/log/{minutes.seq}/"' in browser.get("/audit/log/").content.decode()
        page = browser.get(f"/audit/log/{minutes.seq}/").content.decode()
        assert world.minutes.path in page and world.minutes.id in page and world.minutes.title in page
    outsider = client(people, "outsider")
    log = outsider.get("/audit/log/").content.decode()
    assert f'href="/audit/log/{minutes.seq}/"' not in log and world.leaks(log) == []
    assert "journal.txt" in log
    assert outsider.get(f"/audit/log/{minutes.seq}/").status_code == 404
    assert outsider.get(f"/audit/log/{minutes.seq}/proof.json").status_code == 404
    verified = outsider.post("/audit/log/verify/", {"graph": "on"}).content.decode()
    assert world.leaks(verified) == []
    assert client(people, "visitor").get("/audit/log/").status_code == 302


# --- the ingestion jobs -------------------------------------------------------------------------------------


def test_the_ingestion_jobs(world: World, people: dict[str, User]) -> None:
    for name in ("owner", "member", "outsider"):  # the jobs pages are curators'
        role_set(username=name, role=CURATOR)
    vault_job = f"/curation/jobs/{world.jobs[PRIVATE].id}/"
    for persona in (*INSIDERS, "admin"):
        browser = client(people, persona)
        assert vault_job in browser.get("/curation/jobs/").content.decode()
        page = browser.get(vault_job).content.decode()
        assert world.minutes.path in page
    outsider = client(people, "outsider")
    jobs = outsider.get("/curation/jobs/").content.decode()
    assert vault_job not in jobs and f"/curation/jobs/{world.jobs[PUBLIC].id}/" in jobs
    assert outsider.get(vault_job).status_code == 404
    assert client(people, "visitor").get(vault_job).status_code == 302


def overview(people: dict[str, User], persona: str) -> dict[str, int]:
    page = client(people, persona).get("/graph/")
    assert page.status_code == 200
    return {label: int(n) for label, n in re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td></tr>", page.content.decode())}


def test_the_graph_overview_counts_only_what_the_persona_may_read(
    world: World, people: dict[str, User], empty_graph: Driver
) -> None:
    public = {persona: overview(people, persona) for persona in OUTSIDERS}
    inside = {persona: overview(people, persona) for persona in INSIDERS}
    whole = overview(people, "admin")
    records, _, _ = empty_graph.execute_query("MATCH (c:Chunk) RETURN c.collection AS c, count(*) AS n")
    chunks = {record["c"]: record["n"] for record in records}
    for counts in public.values():
        assert counts["Document"] == 2 and counts["Chunk"] == chunks[PUBLIC]
        assert 0 < counts["Entity"] < whole["Entity"]  # the minutes' own entities are not counted
    for counts in inside.values():
        assert counts["Document"] == 3 and counts["Chunk"] == chunks[PUBLIC] + chunks[PRIVATE]
        assert counts["Entity"] == whole["Entity"]
    assert whole["Document"] == 3 and "in the whole graph" in client(people, "admin").get("/graph/").content.decode()

"""The curation pages against the real Neo4j: who may use them, every action through its page
(its change-log entry, with the curator as actor, and the graph change that follows it, which
``ledger verify --graph`` agrees with), the document deletion preview, collections the curator
cannot read, escaping and CSRF."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client
from neo4j import Driver
from pytest_django.fixtures import Settings

from apps.accounts.models import Collection, CollectionGrant
from apps.ingest.models import Document
from apps.ingest.services import default_extractor, upload_ingest
from apps.ledger.graph import OPERATIONS
from apps.ledger.models import ChangeEntry, GraphChange
from apps.ledger.services import snapshot
from apps.ledger.verify import log_verify

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

ADA = (
    "Ada Lovelace worked with Charles Babbage in London. "
    "Charles Babbage designed the Analytical Engine. "
    "Lovelace published the first algorithm in 1843."
)
BABBAGE = "Charles Babbage was born in London. He taught at Cambridge University."
SECRET = "Grace Hopper worked at Harvard University. Grace Hopper wrote the first compiler."
SCRIPT = "<script>alert(1)</script>"


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Path:
    settings.VECTORS_DIR = tmp_path / "vectors"
    return Path(settings.VECTORS_DIR)


def ingest(driver: Driver, name: str, text: str, collection: str = "lab") -> str:
    [outcome] = upload_ingest(
        driver=driver, name=name, data=text.encode(), collection=collection, extractor=default_extractor()
    )
    assert outcome.document_id, outcome
    return outcome.document_id


@pytest.fixture
def corpus(empty_graph: Driver) -> dict[str, str]:
    """ada.txt and babbage.txt in "lab" (the curators may read it), plans.txt in "secret" (they may not)."""
    group = Group.objects.get_or_create(name="curator")[0]
    CollectionGrant.objects.create(collection=Collection.objects.get_or_create(name="lab")[0], group=group)
    Collection.objects.get_or_create(name="secret")
    return {
        "ada": ingest(empty_graph, "ada.txt", ADA),
        "babbage": ingest(empty_graph, "babbage.txt", BABBAGE),
        "secret": ingest(empty_graph, "plans.txt", SECRET, collection="secret"),
    }


@pytest.fixture
def cora(db: None) -> User:
    """A curator who also audits (so the pages' messages link the change-log entries they name)."""
    user = User.objects.create_user("cora")
    user.groups.add(Group.objects.get_or_create(name="curator")[0], Group.objects.get_or_create(name="auditor")[0])
    return user


@pytest.fixture
def curator(client: Client, cora: User) -> Client:
    client.force_login(cora)
    return client


def entity_ids(driver: Driver) -> dict[str, str]:
    records, _, _ = driver.execute_query("MATCH (e:Entity) RETURN e.name AS name, e.id AS id")
    return {record["name"]: record["id"] for record in records}


def entity(driver: Driver, entity_id: str) -> dict[str, Any] | None:
    records, _, _ = driver.execute_query(
        "MATCH (e:Entity {id: $id}) RETURN e {.name, .aliases, "
        "documents: COLLECT { MATCH (u)-[:MENTIONS]->(e) RETURN DISTINCT u.document_id ORDER BY u.document_id }, "
        "mentions: COUNT { ()-[:MENTIONS]->(e) }} AS e",
        id=entity_id,
    )
    return dict(records[0]["e"]) if records else None


def relations(driver: Driver) -> list[tuple[str, str, str, str | None]]:
    records, _, _ = driver.execute_query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) RETURN a.id AS a, r.predicate AS p, b.id AS b, r.status AS s "
        "ORDER BY r.weight DESC, a.id, p, b.id"
    )
    return [(r["a"], r["p"], r["b"], r["s"]) for r in records]


def logged_since(seq: int) -> list[tuple[str, str, str]]:
    return list(ChangeEntry.objects.filter(seq__gte=seq).values_list("action", "subject_id", "actor"))


def next_seq() -> int:
    return ChangeEntry.objects.count()


def entry_links(response: Any) -> list[int]:
    """The change-log entries the page's messages link to."""
    return [int(seq) for seq in re.findall(r'<a href="/audit/log/(\d+)/">Change-log entry', response.content.decode())]


def reapply(driver: Driver, seq: int) -> None:
    """Apply the graph change of entry ``seq`` once more (graph changes are idempotent)."""
    change = GraphChange.objects.get(entry_id=seq)
    assert change.applied_at is not None
    driver.execute_query(OPERATIONS[change.operation["cypher"]], **change.operation["params"])


def graph_ok(driver: Driver) -> None:
    report = log_verify(chain=None, driver=driver)
    assert report.ok, report.problems


# --- access ----------------------------------------------------------------------------------


def test_visitors_log_in_users_without_the_role_get_403_curators_get_the_pages(
    corpus: dict[str, str], empty_graph: Driver, client: Client, cora: User
) -> None:
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    urls = [
        "/curation/",
        "/curation/entities/",
        f"/curation/entities/{babbage}/",
        f"/curation/entities/{babbage}/delete/",
        f"/curation/entities/{babbage}/split/",
        "/curation/entities/suggestions/",
        "/curation/relations/",
        "/curation/documents/",
        f"/curation/documents/{corpus['ada']}/delete/",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(settings.LOGIN_URL), url
    client.force_login(User.objects.create_user("otto"))
    for url in urls:
        assert client.get(url).status_code == 403, url
    assert client.post(f"/curation/entities/{babbage}/rename/", {"name": "X"}).status_code == 403
    client.force_login(cora)
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert entity(empty_graph, babbage) is not None and next_seq() == 3  # three documents ingested, nothing else


# --- entities --------------------------------------------------------------------------------


def test_rename_alias_merge_and_delete_through_the_pages(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    ids = entity_ids(empty_graph)
    babbage, ada, lovelace, london = ids["Charles Babbage"], ids["Ada Lovelace"], ids["Lovelace"], ids["London"]
    page = curator.get(f"/curation/entities/{babbage}/").content.decode()
    assert "Charles Babbage" in page and "<mark>Charles Babbage</mark>" in page and "lab/babbage.txt" in page

    start = next_seq()
    response = curator.post(f"/curation/entities/{babbage}/rename/", {"name": "Charles Babbage FRS"}, follow=True)
    assert logged_since(start) == [("entity.renamed", babbage, "user:cora")] and entry_links(response) == [start]
    renamed = entity(empty_graph, babbage)
    assert renamed is not None and renamed["name"] == "Charles Babbage FRS" and "Charles Babbage" in renamed["aliases"]

    response = curator.post(f"/curation/entities/{babbage}/alias/", {"alias": "C. Babbage"}, follow=True)
    assert logged_since(start + 1) == [("curation.edited", babbage, "user:cora")] and entry_links(response) == [
        start + 1
    ]
    aliased = entity(empty_graph, babbage)
    assert aliased is not None and "C. Babbage" in aliased["aliases"]
    reapply(empty_graph, start + 1)
    assert entity(empty_graph, babbage) == aliased
    found = curator.get("/curation/entities/", {"q": "c. babbage"}).content.decode()
    assert f"/curation/entities/{babbage}/" in found
    response = curator.post(f"/curation/entities/{babbage}/alias/", {"alias": "C. Babbage"}, follow=True)
    assert "already a name of the entity" in response.content.decode() and next_seq() == start + 2

    candidates = curator.get(f"/curation/entities/{ada}/", {"merge_q": "lovelace"}).content.decode()
    assert f'name="drop" value="{lovelace}"' in candidates
    preview = curator.post(f"/curation/entities/{ada}/merge/", {"keep": ada, "drop": lovelace}).content.decode()
    assert "Nothing changes until you confirm." in preview and next_seq() == start + 2
    response = curator.post(
        f"/curation/entities/{ada}/merge/", {"keep": ada, "drop": lovelace, "confirmed": "1"}, follow=True
    )
    assert logged_since(start + 2) == [("entity.merged", lovelace, "user:cora")]
    assert response.redirect_chain == [(f"/curation/entities/{ada}/", 302)] and entry_links(response) == [start + 2]
    merged = entity(empty_graph, ada)
    assert entity(empty_graph, lovelace) is None and merged is not None and "Lovelace" in merged["aliases"]
    assert merged["mentions"] == 2

    confirm = curator.get(f"/curation/entities/{london}/delete/").content.decode()
    assert "<strong>2</strong> mentions" in confirm and "<strong>2</strong> documents" in confirm
    response = curator.post(f"/curation/entities/{london}/delete/", follow=True)
    assert logged_since(start + 3) == [("entity.deleted", london, "user:cora")] and entry_links(response) == [start + 3]
    assert entity(empty_graph, london) is None
    graph_ok(empty_graph)


def test_split_moves_one_documents_mentions_to_a_new_entity(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    form = curator.get(f"/curation/entities/{babbage}/split/").content.decode()
    assert "lab/ada.txt (2 mentions)" in form and "lab/babbage.txt (1 mention)" in form
    start = next_seq()
    choice = {"name": "Charles Babbage (born in London)", "documents": [corpus["babbage"]]}
    preview = curator.post(f"/curation/entities/{babbage}/split/", choice).content.decode()
    assert "1 of the 3 mentions of “Charles Babbage” move" in preview and next_seq() == start
    response = curator.post(f"/curation/entities/{babbage}/split/", {**choice, "confirmed": "1"}, follow=True)
    [(created, new_id, actor), edited] = logged_since(start)
    assert (created, actor) == ("entity.created", "user:cora") and edited == ("curation.edited", babbage, "user:cora")
    assert response.redirect_chain == [(f"/curation/entities/{new_id}/", 302)] and entry_links(response) == [start + 1]
    new, old = entity(empty_graph, new_id), entity(empty_graph, babbage)
    assert new is not None and new["name"] == "Charles Babbage (born in London)"
    assert new["documents"] == [corpus["babbage"]] and new["mentions"] == 1
    assert old is not None and old["documents"] == [corpus["ada"]] and old["mentions"] == 2
    after = snapshot(ChangeEntry.objects.get(seq=start).after)
    assert after == {"kind": "Entity", "id": new_id, "name": "Charles Babbage (born in London)", "type": "PERSON"}
    records, _, _ = empty_graph.execute_query(
        "MATCH (n:Entity {id: $id})-[r:RELATED]-(o:Entity) RETURN r.weight AS weight, COLLECT {"
        " MATCH (n)-[ev:EVIDENCE {predicate: r.predicate}]-(o) WHERE startNode(ev) = startNode(r) RETURN ev }"
        " AS evidence",
        id=new_id,
    )
    assert records and all(
        [ev["document"] for ev in record["evidence"]] == [corpus["babbage"]]
        and record["weight"] == sum(len(ev["units"]) for ev in record["evidence"])
        for record in records
    )
    records, _, _ = empty_graph.execute_query(
        "MATCH (:Entity {id: $id})-[ev:EVIDENCE]-() RETURN DISTINCT ev.document AS document", id=babbage
    )
    assert corpus["babbage"] not in {record["document"] for record in records}
    before = relations(empty_graph)
    reapply(empty_graph, start + 1)
    assert (entity(empty_graph, new_id), entity(empty_graph, babbage), relations(empty_graph)) == (new, old, before)
    refused = curator.post(
        f"/curation/entities/{babbage}/split/", {"name": "Again", "documents": [corpus["ada"]], "confirmed": "1"}
    ).content.decode()
    assert "hold every mention of the entity" in refused
    graph_ok(empty_graph)


def test_a_suggested_pair_merges_once_confirmed_keeping_the_more_mentioned(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    ids = entity_ids(empty_graph)
    ingest(empty_graph, "lovelace.txt", "Lovelace wrote notes. Lovelace translated an article.")
    page = curator.get("/curation/entities/suggestions/?embeddings=1").content.decode()
    pairs = re.findall(r'name="first" value="(\w+)"><input type="hidden" name="second" value="(\w+)"', page)
    assert (ids["Lovelace"], ids["Ada Lovelace"]) in pairs  # the one to keep first
    assert "embedding 0." in page
    mentions = {
        name: (entity(empty_graph, ids[name]) or {}).get("mentions", 0) for name in ("Ada Lovelace", "Lovelace")
    }
    assert mentions["Lovelace"] > mentions["Ada Lovelace"]
    start = next_seq()
    pair = {"first": ids["Ada Lovelace"], "second": ids["Lovelace"]}
    preview = curator.post("/curation/entities/suggestions/merge/", pair).content.decode()
    assert "<h1>Merge “Ada Lovelace” into “Lovelace”?</h1>" in preview and next_seq() == start
    response = curator.post("/curation/entities/suggestions/merge/", {**pair, "confirmed": "1"}, follow=True)
    assert logged_since(start) == [("entity.merged", ids["Ada Lovelace"], "user:cora")]
    assert entry_links(response) == [start] and entity(empty_graph, ids["Ada Lovelace"]) is None
    kept = entity(empty_graph, ids["Lovelace"])
    assert kept is not None and kept["mentions"] == sum(mentions.values()) and "Ada Lovelace" in kept["aliases"]
    graph_ok(empty_graph)


# --- relations -------------------------------------------------------------------------------


def test_approve_reject_edit_the_predicate_and_remove_through_the_pages(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    source, predicate, target, _ = relations(empty_graph)[0]
    key = {"source": source, "predicate": predicate, "target": target}
    listed = curator.get("/curation/relations/", {"status": "proposed", "entity": source}).content.decode()
    assert f'name="predicate" value="{predicate}"' in listed
    start = next_seq()
    back = f"/curation/relations/?entity={source}"

    response = curator.post("/curation/relations/approve/", {**key, "next": back}, follow=True)
    assert response.redirect_chain == [(back, 302)] and entry_links(response) == [start]
    response = curator.post("/curation/relations/reject/", key, follow=True)
    assert entry_links(response) == [start + 1]
    assert (source, predicate, target, "rejected") in relations(empty_graph)
    assert (
        f'name="target" value="{target}"'
        in curator.get("/curation/relations/", {"status": "rejected"}).content.decode()
    )

    response = curator.post(
        "/curation/relations/predicate/", {**key, "new_predicate": "Collaborated With"}, follow=True
    )
    assert entry_links(response) == [start + 2]
    now = relations(empty_graph)
    assert (source, "collaborated_with", target, "rejected") in now
    assert not any(row[:3] == (source, predicate, target) for row in now)
    reapply(empty_graph, start + 3)
    assert relations(empty_graph) == now

    new_key = {**key, "predicate": "collaborated_with"}
    response = curator.post("/curation/relations/remove/", new_key, follow=True)
    assert entry_links(response) == [start + 4]
    assert not any(row[:3] == (source, "collaborated_with", target) for row in relations(empty_graph))
    relation = f"{source}|{predicate}|{target}"
    renamed = f"{source}|collaborated_with|{target}"
    assert logged_since(start) == [
        ("relation.approved", relation, "user:cora"),
        ("relation.rejected", relation, "user:cora"),
        ("curation.edited", relation, "user:cora"),
        ("curation.edited", renamed, "user:cora"),
        ("relation.removed", renamed, "user:cora"),
    ]
    response = curator.post("/curation/relations/remove/", new_key, follow=True)
    assert "there is no relation" in response.content.decode() and next_seq() == start + 5
    graph_ok(empty_graph)


# --- documents -------------------------------------------------------------------------------


def test_the_delete_preview_lists_what_goes_then_the_document_goes(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    listed = curator.get("/curation/documents/").content.decode()
    assert "ada.txt" in listed and "babbage.txt" in listed
    url = f"/curation/documents/{corpus['babbage']}/delete/"
    preview = curator.get(url).content.decode()
    assert "<strong>1</strong> chunk," in preview
    released = re.search(r'<ul class="released">(.*?)</ul>', preview, re.S)
    assert released is not None and "Cambridge University" in released.group(1)
    assert "Charles Babbage" not in released.group(1) and "London" not in released.group(1)  # ada.txt has them too
    start = next_seq()
    response = curator.post(url, follow=True)
    assert logged_since(start) == [("document.deleted", "lab/babbage.txt", "user:cora")]
    assert entry_links(response) == [start] and response.redirect_chain == [("/curation/documents/", 302)]
    assert not Document.objects.filter(id=corpus["babbage"]).exists()
    names = entity_ids(empty_graph)
    assert "Cambridge University" not in names and "Charles Babbage" in names
    graph_ok(empty_graph)


def test_what_the_curator_cannot_read_stays_out_of_sight(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    hopper = entity_ids(empty_graph)["Grace Hopper"]
    assert "Grace Hopper" not in curator.get("/curation/entities/", {"q": "grace"}).content.decode()
    assert curator.get(f"/curation/entities/{hopper}/").status_code == 404
    assert curator.post(f"/curation/entities/{hopper}/rename/", {"name": "X"}).status_code == 404
    assert "plans.txt" not in curator.get("/curation/documents/").content.decode()
    assert curator.get(f"/curation/documents/{corpus['secret']}/delete/").status_code == 404
    assert curator.post(f"/curation/documents/{corpus['secret']}/delete/").status_code == 404
    assert "Grace Hopper" not in curator.get("/curation/entities/suggestions/").content.decode()
    assert any(hopper in (row[0], row[2]) for row in relations(empty_graph))
    assert f"/curation/entities/{hopper}/" not in curator.get("/curation/relations/").content.decode()
    assert next_seq() == 3 and entity(empty_graph, hopper) is not None


# --- escaping and CSRF -----------------------------------------------------------------------


def test_an_entity_name_with_markup_stays_text(corpus: dict[str, str], empty_graph: Driver, curator: Client) -> None:
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    response = curator.post(f"/curation/entities/{babbage}/rename/", {"name": f"Babbage {SCRIPT}"}, follow=True)
    assert entry_links(response) == [3]
    for url in (f"/curation/entities/{babbage}/", "/curation/entities/", "/curation/relations/"):
        content = curator.get(url, {"q": "babbage"}).content.decode()
        assert SCRIPT not in content and "Babbage &lt;script&gt;alert(1)&lt;/script&gt;" in content, url
    assert SCRIPT not in response.content.decode()


def test_every_action_needs_the_csrf_token(corpus: dict[str, str], empty_graph: Driver, cora: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(cora)
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    source, predicate, target, _ = relations(empty_graph)[0]
    key = {"source": source, "predicate": predicate, "target": target}
    attempts = [
        (f"/curation/entities/{babbage}/rename/", {"name": "X"}),
        (f"/curation/entities/{babbage}/alias/", {"alias": "X"}),
        (f"/curation/entities/{babbage}/delete/", {}),
        ("/curation/relations/approve/", key),
        ("/curation/relations/predicate/", {**key, "new_predicate": "x"}),
        (f"/curation/documents/{corpus['ada']}/delete/", {}),
    ]
    for url, data in attempts:
        assert client.post(url, data).status_code == 403, url
    assert next_seq() == 3
    client.get(f"/curation/entities/{babbage}/")
    token = client.cookies[settings.CSRF_COOKIE_NAME].value
    response = client.post(
        f"/curation/entities/{babbage}/rename/", {"name": "Charles Babbage FRS", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302 and logged_since(3) == [("entity.renamed", babbage, "user:cora")]


def test_the_entity_page_shows_each_relation_s_sentence_and_keeps_co_occurrences_apart(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    babbage = entity_ids(empty_graph)["Charles Babbage"]
    page = curator.get(f"/curation/entities/{babbage}/").content.decode()
    extracted, _, co_occurring = page.partition("<h2>Co-occurs with</h2>")
    assert "<h2>Relations</h2>" in extracted
    assert "<q>Charles Babbage designed the Analytical Engine.</q>" in page  # the sentence both are named in
    records, _, _ = empty_graph.execute_query(
        "MATCH (:Entity {id: $id})-[r:RELATED]-() RETURN r.predicate AS p", id=babbage
    )
    predicates = {record["p"] for record in records}
    assert "co_occurs_with" in predicates
    assert "co_occurs_with" not in extracted and "<td><a href=" in co_occurring
    assert "Grace Hopper" not in page  # evidence from an unreadable collection stays out


def _synonym_rows(page: str) -> list[tuple[str, str]]:
    """The (source, target) pairs of the synonym table's review forms."""
    return re.findall(r'name="source" value="(\w+)"><input type="hidden" name="target" value="(\w+)"', page)


def test_stored_synonym_edges_are_listed_confirmed_and_rejected_through_the_page(
    corpus: dict[str, str], empty_graph: Driver, curator: Client
) -> None:
    ingest(empty_graph, "wilkes.txt", "Maurice Wilkes built EDSAC at the University of Cambridge.")
    ids = {name.removeprefix("the "): entity_id for name, entity_id in entity_ids(empty_graph).items()}
    pair = tuple(sorted((ids["Cambridge University"], ids["University of Cambridge"])))
    page = curator.get("/curation/entities/suggestions/").content.decode()
    assert "Synonym edges" in page and pair in _synonym_rows(page)

    start = next_seq()
    response = curator.post(
        "/curation/entities/synonyms/review/",
        {"source": pair[1], "target": pair[0], "decision": "reject"},  # either order names the edge
        follow=True,
    )
    assert logged_since(start) == [("synonym.rejected", f"{pair[0]}~{pair[1]}", "user:cora")]
    assert entry_links(response) == [start]
    records, _, _ = empty_graph.execute_query(
        "MATCH (:Entity {id: $a})-[s:SYNONYM]->(:Entity {id: $b}) RETURN s.status AS status", a=pair[0], b=pair[1]
    )
    assert [r["status"] for r in records] == ["rejected"]
    assert pair not in _synonym_rows(curator.get("/curation/entities/suggestions/").content.decode())
    assert pair in _synonym_rows(curator.get("/curation/entities/suggestions/?synonyms=rejected").content.decode())

    curator.post("/curation/entities/synonyms/review/", {"source": pair[0], "target": pair[1], "decision": "confirm"})
    assert logged_since(start + 1) == [("synonym.confirmed", f"{pair[0]}~{pair[1]}", "user:cora")]
    response = curator.post(
        "/curation/entities/synonyms/review/",
        {"source": pair[0], "target": pair[1], "decision": "confirm"},
        follow=True,
    )
    assert "already confirmed" in response.content.decode() and next_seq() == start + 2
    graph_ok(empty_graph)

"""The curation pages with a stand-in graph: who may use them, what they show (escaped, limited to
the readable collections), what each action sends to its service and tells the curator (with the
change-log link), CSRF, and the 503 page when Neo4j is out of reach."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import neo4j.exceptions
import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.test import Client

from apps.accounts.models import Collection, CollectionGrant
from apps.accounts.roles import AUDITOR
from apps.accounts.services import role_set
from apps.curation import pages, services, views
from apps.curation.pages import Listing, page_number
from apps.curation.services import Curated, CurationError
from apps.curation.suggestions import NameEmbedder
from apps.graph import cypher
from apps.graph.evidence import snippet
from apps.ingest.models import Document
from tests.unit.curation.fakes import DownDriver, FakeDriver
from tests.unit.vectors.fakes import hashing_embed

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
ADA = "a" * 32
BABBAGE = "b" * 32

GET_PAGES = [
    "/curation/",
    "/curation/entities/",
    f"/curation/entities/{ADA}/",
    f"/curation/entities/{ADA}/delete/",
    f"/curation/entities/{ADA}/split/",
    "/curation/entities/suggestions/",
    "/curation/relations/",
    "/curation/documents/",
    f"/curation/documents/{'d' * 32}/delete/",
]
POSTS = [
    f"/curation/entities/{ADA}/rename/",
    f"/curation/entities/{ADA}/alias/",
    f"/curation/entities/{ADA}/merge/",
    f"/curation/entities/{ADA}/delete/",
    "/curation/entities/suggestions/merge/",
    "/curation/relations/approve/",
    "/curation/relations/reject/",
    "/curation/relations/remove/",
    "/curation/relations/predicate/",
]


# --- data ------------------------------------------------------------------------------------


def entity_row(entity_id: str = ADA, name: str = "Ada Lovelace", mentions: int = 3) -> dict[str, Any]:
    return {"id": entity_id, "name": name, "type": "PERSON", "aliases": ["Lovelace"], "mentions": mentions}


def entity_record(name: str = "Ada Lovelace", mentions: int = 3) -> dict[str, Any]:
    return {
        "entity": {"id": ADA, "name": name, "type": "PERSON", "aliases": ["Lovelace", SCRIPT]},
        "mentions": mentions,
        "documents": 1,
        "all_mentions": mentions + 2,
        "all_relations": 1,
        "all_documents": 2,
    }


def listing(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"total": len(rows), "rows": rows}]


RELATION = {
    "source": ADA,
    "source_name": "Ada Lovelace",
    "source_type": "PERSON",
    "predicate": "work_with",
    "target": BABBAGE,
    "target_name": f"Babbage {SCRIPT}",
    "target_type": "PERSON",
    "status": "proposed",
    "weight": 2,
}


def entity_graph(driver: FakeDriver, *, name: str = "Ada Lovelace", mentions: int = 3) -> FakeDriver:
    """An entity page's statements: one entity, one snippet, one relation."""
    snippet_row = {
        "unit": "c" * 32,
        "label": "Chunk",
        "text": "Ada Lovelace worked with Charles Babbage.",
        "start": 0,
        "end": 12,
        "document_id": "d" * 32,
        "path": "ada.txt",
        "title": "ada.txt",
        "collection": "lab",
    }
    relation = {
        "source": ADA,
        "predicate": "work_with",
        "target": BABBAGE,
        "outgoing": True,
        "status": "proposed",
        "weight": 2,
        "other": {"id": BABBAGE, "name": f"Babbage {SCRIPT}", "type": "PERSON"},
    }
    driver.answers.update(
        {
            cypher.CURATION_ENTITY: [entity_record(name, mentions)],
            cypher.CURATION_ENTITY_SNIPPETS: [snippet_row],
            cypher.CURATION_ENTITY_RELATIONS: [relation],
            cypher.CURATION_ENTITY_DOCUMENTS: [
                {"id": "d" * 32, "path": "ada.txt", "title": "", "collection": "lab", "mentions": 2},
                {"id": "e" * 32, "path": "bio.txt", "title": "", "collection": "lab", "mentions": 1},
            ],
        }
    )
    return driver


def messages_of(response: Any) -> list[str]:
    return re.findall(r'<li class="(?:ok|down)" role="\w+">(.*?)</li>', response.content.decode(), re.S)


@pytest.fixture
def lab(curator_user: User) -> None:
    """Collections: ``demo`` public, ``lab`` granted to the curators, ``secret`` to nobody."""
    Collection.objects.create(name="demo", public=True)
    CollectionGrant.objects.create(
        collection=Collection.objects.create(name="lab"), group=Group.objects.get(name="curator")
    )
    Collection.objects.create(name="secret")


def document(collection: str, path: str, **counts: int) -> Document:
    return Document.objects.create(
        id=f"{collection}-{path}".ljust(32, "0")[:32],
        collection=collection,
        path=path,
        title=path.rsplit(".", 1)[0],
        mime="text/plain",
        sha256="1" * 64,
        size=10,
        counts=counts,
    )


def recording(calls: list[dict[str, Any]], result: Any) -> Callable[..., Any]:
    """A stand-in service that records its keyword arguments and answers ``result``."""

    def record(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return result

    return record


# --- access ----------------------------------------------------------------------------------


@pytest.mark.parametrize("url", GET_PAGES)
def test_visitors_are_sent_to_log_in(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(f"{settings.LOGIN_URL}?next=")


@pytest.mark.parametrize("url", GET_PAGES + POSTS)
def test_users_without_the_curator_role_get_a_plain_403(outsider: Client, graph: FakeDriver, url: str) -> None:
    response = outsider.post(url) if url in POSTS else outsider.get(url)
    assert response.status_code == 403
    assert "curator" in response.content.decode() and graph.calls == []


def test_the_index_and_documents_pages_open_for_curators(curator: Client) -> None:
    assert curator.get("/curation/").status_code == 200
    assert curator.get("/curation/documents/").status_code == 200


def test_actions_answer_only_posts(curator: Client, graph: FakeDriver) -> None:
    assert curator.get(f"/curation/entities/{ADA}/rename/").status_code == 405
    assert curator.get("/curation/relations/approve/").status_code == 405


# --- entities --------------------------------------------------------------------------------


def test_the_entity_list_searches_the_readable_collections_and_escapes_names(
    curator: Client, graph: FakeDriver, lab: None
) -> None:
    graph.answers.update(
        {
            cypher.CURATION_ENTITY_TYPES: [{"type": "PERSON"}, {"type": "GPE"}],
            cypher.CURATION_ENTITIES_PAGE: listing([entity_row(name=f"Ada {SCRIPT}")]),
            cypher.CURATION_ENTITY_DOCUMENT_COUNTS: [{"id": ADA, "documents": 2}],
        }
    )
    response = curator.get("/curation/entities/", {"q": "  ADA ", "type": "PERSON", "page": "2"})
    content = response.content.decode()
    assert response.status_code == 200
    assert SCRIPT not in content and "Ada &lt;script&gt;alert(1)&lt;/script&gt;" in content
    assert f'href="/curation/entities/{ADA}/"' in content
    [params] = graph.params_of(cypher.CURATION_ENTITIES_PAGE)
    assert params == {"query": "ada", "type": "PERSON", "collections": ["demo", "lab"], "skip": 50, "limit": 50}
    assert graph.params_of(cypher.CURATION_ENTITY_DOCUMENT_COUNTS)[0]["collections"] == ["demo", "lab"]


def test_an_unknown_type_is_reported_and_ignored(curator: Client, graph: FakeDriver) -> None:
    graph.answers.update(
        {cypher.CURATION_ENTITY_TYPES: [{"type": "PERSON"}], cypher.CURATION_ENTITIES_PAGE: listing([])}
    )
    response = curator.get("/curation/entities/", {"type": "NOPE"})
    assert "No entities match." in response.content.decode() and 'role="alert"' in response.content.decode()
    assert graph.params_of(cypher.CURATION_ENTITIES_PAGE)[0]["type"] == ""


def test_htmx_gets_only_the_results(curator: Client, graph: FakeDriver) -> None:
    graph.answers.update(
        {
            cypher.CURATION_ENTITY_TYPES: [],
            cypher.CURATION_ENTITIES_PAGE: listing([entity_row()]),
            cypher.CURATION_ENTITY_DOCUMENT_COUNTS: [{"id": ADA, "documents": 1}],
        }
    )
    content = curator.get("/curation/entities/", {"q": "ada"}, headers={"HX-Request": "true"}).content.decode()
    assert content.lstrip().startswith('<section id="results"') and "curation-nav" not in content


def test_the_entity_page_shows_names_mentions_relations_and_actions(curator: Client, graph: FakeDriver) -> None:
    entity_graph(graph, name=f"Ada {SCRIPT}")
    response = curator.get(f"/curation/entities/{ADA}/")
    content = response.content.decode()
    assert response.status_code == 200
    assert SCRIPT not in content and content.count("&lt;script&gt;") >= 3  # name, alias, related entity
    assert "<mark>Ada Lovelace</mark> worked with Charles Babbage." in content
    assert "lab/ada.txt" in content and "(5 in all)" in content
    for action in ("rename", "alias", "split", "delete"):
        assert f"/curation/entities/{ADA}/{action}/" in content
    for action in ("approve", "reject", "remove", "predicate"):
        assert f'action="/curation/relations/{action}/"' in content
    page = content[content.index('class="curation-page"') :]
    assert page.count('method="post"') == page.count("csrfmiddlewaretoken") == 6  # rename, alias, the relation's 4


def test_the_entity_page_finds_merge_partners(curator: Client, graph: FakeDriver) -> None:
    entity_graph(graph)
    graph.answers.update(
        {
            cypher.CURATION_ENTITIES_PAGE: listing([entity_row(), entity_row(BABBAGE, "Lovelace", 2)]),
            cypher.CURATION_ENTITY_DOCUMENT_COUNTS: [],
        }
    )
    content = curator.get(f"/curation/entities/{ADA}/", {"merge_q": "lovelace"}).content.decode()
    assert content.count(f'name="drop" value="{BABBAGE}"') == 1 and content.count(f'name="keep" value="{BABBAGE}"') == 1
    assert f'name="drop" value="{ADA}"' in content  # "merge this entity into it"


def test_a_missing_or_unreadable_entity_is_a_404(curator: Client, graph: FakeDriver, lab: None) -> None:
    graph.answers[cypher.CURATION_ENTITY] = []
    assert curator.get(f"/curation/entities/{ADA}/").status_code == 404
    graph.answers[cypher.CURATION_ENTITY] = [entity_record(mentions=0)]  # exists, no readable mention
    assert curator.get(f"/curation/entities/{ADA}/").status_code == 404
    assert curator.post(f"/curation/entities/{ADA}/rename/", {"name": "X"}).status_code == 404


def test_rename_logs_with_the_curator_as_actor_and_links_the_entry(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    entity_graph(graph)
    calls: list[dict[str, Any]] = []

    def rename(**kwargs: Any) -> Curated:
        calls.append(kwargs)
        return Curated(seq=7, applied=True)

    monkeypatch.setattr(services, "entity_rename", rename)
    response = curator.post(f"/curation/entities/{ADA}/rename/", {"name": f"Ada  {SCRIPT}"}, follow=True)
    assert calls == [{"driver": graph, "entity_id": ADA, "name": f"Ada  {SCRIPT}", "actor": "user:cora"}]
    assert response.redirect_chain == [(f"/curation/entities/{ADA}/", 302)]
    [message] = messages_of(response)
    # A curator who is no auditor may not open the change log: the entry is named, not linked.
    assert "Renamed to “Ada &lt;script&gt;alert(1)&lt;/script&gt;”. Change-log entry #7." in message
    role_set(username="cora", role=AUDITOR)
    response = curator.post(f"/curation/entities/{ADA}/rename/", {"name": "Ada"}, follow=True)
    assert '<a href="/audit/log/7/">Change-log entry #7</a>.' in messages_of(response)[0]


def test_a_refused_action_is_an_error_message_not_a_trace(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    entity_graph(graph)

    def refuse(**kwargs: Any) -> Curated:
        raise CurationError(f"{SCRIPT} is already a name of the entity")

    monkeypatch.setattr(services, "entity_alias_add", refuse)
    response = curator.post(f"/curation/entities/{ADA}/alias/", {"alias": "Lovelace"}, follow=True)
    [message] = messages_of(response)
    assert message == "&lt;script&gt;alert(1)&lt;/script&gt; is already a name of the entity"
    assert "/audit/log/" not in message


def test_an_invalid_form_is_reported(curator: Client, graph: FakeDriver) -> None:
    entity_graph(graph)
    response = curator.post(f"/curation/entities/{ADA}/rename/", {"name": ""}, follow=True)
    assert messages_of(response) == ["New name: This field is required."]


def test_a_pending_graph_write_is_said_so(curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    entity_graph(graph)
    monkeypatch.setattr(services, "entity_delete", lambda **kwargs: Curated(seq=3, applied=False))
    graph.answers.update({cypher.CURATION_ENTITY_TYPES: [], cypher.CURATION_ENTITIES_PAGE: listing([])})
    response = curator.post(f"/curation/entities/{ADA}/delete/", follow=True)
    assert response.redirect_chain[0] == ("/curation/entities/", 302)
    [message] = messages_of(response)
    assert "Change-log entry #3" in message and "Neo4j is unavailable" in message


def test_the_delete_confirmation_lists_what_goes(curator: Client, graph: FakeDriver) -> None:
    entity_graph(graph)
    content = curator.get(f"/curation/entities/{ADA}/delete/").content.decode()
    assert "<strong>5</strong> mentions" in content and "<strong>2</strong> documents" in content
    assert "<strong>1</strong> relation " in content and "2 aliases" in content
    assert "csrfmiddlewaretoken" in content


def test_merge_names_this_entity_and_lands_on_the_kept_one(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    entity_graph(graph)
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "entity_merge", recording(calls, Curated(seq=4, applied=True)))
    preview = curator.post(f"/curation/entities/{ADA}/merge/", {"keep": BABBAGE, "drop": ADA})
    page = preview.content.decode()
    assert preview.status_code == 200 and not calls, "a merge is previewed first"
    assert "<h1>Merge “Ada Lovelace” into “Ada Lovelace”?</h1>" in page
    assert f'name="keep" value="{BABBAGE}"' in page and 'name="confirmed" value="1"' in page
    assert f'href="/curation/entities/{ADA}/">Cancel</a>' in page
    response = curator.post(
        f"/curation/entities/{ADA}/merge/", {"keep": BABBAGE, "drop": ADA, "confirmed": "1"}, follow=True
    )
    assert response.redirect_chain == [(f"/curation/entities/{BABBAGE}/", 302)]
    assert "Merged “Ada Lovelace” into “Ada Lovelace”: 3 mentions moved" in messages_of(response)[0]
    assert calls[0]["keep"] == BABBAGE and calls[0]["drop"] == ADA and calls[0]["actor"] == "user:cora"
    response = curator.post(f"/curation/entities/{ADA}/merge/", {"keep": BABBAGE, "drop": "c" * 32}, follow=True)
    assert len(calls) == 1 and messages_of(response) == ["a merge names this entity and one other"]


def test_the_split_page_offers_the_documents_and_shows_a_refusal_inline(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    entity_graph(graph)
    content = curator.get(f"/curation/entities/{ADA}/split/").content.decode()
    assert "lab/ada.txt (2 mentions)" in content and "lab/bio.txt (1 mention)" in content

    def refuse(**kwargs: Any) -> Curated:
        raise CurationError("those documents hold every mention of the entity: rename it instead")

    monkeypatch.setattr(services, "entity_split", refuse)
    graph.answers[cypher.CURATION_SPLIT_COUNTS] = [{"moving": 2, "total": 3}]
    preview = curator.post(f"/curation/entities/{ADA}/split/", {"name": "Ada (2)", "documents": ["d" * 32]})
    page = preview.content.decode()
    assert preview.status_code == 200 and "2 of the 3 mentions of “Ada Lovelace” move" in page
    assert "1 stay with it" in page and 'name="confirmed" value="1"' in page
    response = curator.post(
        f"/curation/entities/{ADA}/split/", {"name": "Ada (2)", "documents": ["d" * 32], "confirmed": "1"}
    )
    assert response.status_code == 400 and "rename it instead" in response.content.decode()
    response = curator.post(f"/curation/entities/{ADA}/split/", {"name": "Ada (2)", "documents": ["x" * 32]})
    assert response.status_code == 400 and "not one of the available choices" in response.content.decode()


def test_a_split_lands_on_the_new_entity(curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    entity_graph(graph)
    calls: list[dict[str, Any]] = []
    new = Curated(seq=9, applied=True, entries=(8, 9), entity_id="f" * 32)
    monkeypatch.setattr(services, "entity_split", recording(calls, new))
    data = {"name": "Ada (2)", "documents": ["e" * 32], "confirmed": "1"}
    response = curator.post(f"/curation/entities/{ADA}/split/", data)
    assert response["Location"] == f"/curation/entities/{'f' * 32}/"
    assert calls == [
        {"driver": graph, "entity_id": ADA, "document_ids": ["e" * 32], "name": "Ada (2)", "actor": "user:cora"}
    ]


def test_suggestions_list_pairs_and_a_merge_is_confirmed_first(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph.answers[cypher.CURATION_SUGGESTION_CANDIDATES] = [
        {"id": ADA, "name": f"Ada Lovelace {SCRIPT}", "type": "PERSON", "aliases": [], "mentions": 2},
        {"id": BABBAGE, "name": f"Lovelace {SCRIPT}", "type": "PERSON", "aliases": [], "mentions": 5},
    ]
    graph.answers[cypher.CURATION_SYNONYMS] = []
    loads: list[bool] = []

    def embedder(*, load: bool) -> NameEmbedder:
        loads.append(load)
        return NameEmbedder(lambda texts: hashing_embed(list(texts), dim=32), "ready")

    monkeypatch.setattr(views, "name_embedder", embedder)
    content = curator.get("/curation/entities/suggestions/").content.decode()
    assert SCRIPT not in content and "embedding 0." in content and "hx-trigger" not in content and loads == [False]
    assert f'name="first" value="{BABBAGE}"' in content and f'name="second" value="{ADA}"' in content
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "entity_merge", recording(calls, Curated(seq=5, applied=True)))
    entity_graph(graph)
    graph.answers[cypher.CURATION_MENTION_COUNTS] = [{"id": BABBAGE, "mentions": 5}, {"id": ADA, "mentions": 2}]
    pair = {"first": ADA, "second": BABBAGE}
    preview = curator.post("/curation/entities/suggestions/merge/", pair)
    assert preview.status_code == 200 and not calls and "Nothing changes until you confirm." in preview.content.decode()
    response = curator.post("/curation/entities/suggestions/merge/", {**pair, "confirmed": "1"})
    assert response["Location"] == f"/curation/entities/{BABBAGE}/"
    assert calls == [{"driver": graph, "keep": BABBAGE, "drop": ADA, "actor": "user:cora"}]


def test_suggestions_rank_by_names_first_while_the_embedder_is_cold(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph.answers[cypher.CURATION_SUGGESTION_CANDIDATES] = [
        {"id": ADA, "name": "Ada Lovelace", "type": "PERSON", "aliases": [], "mentions": 2},
        {"id": BABBAGE, "name": "Lovelace", "type": "PERSON", "aliases": [], "mentions": 5},
    ]
    graph.answers[cypher.CURATION_SYNONYMS] = []
    loads: list[bool] = []

    def embedder(*, load: bool) -> NameEmbedder:
        loads.append(load)
        if load:
            return NameEmbedder(lambda texts: hashing_embed(list(texts), dim=32), "ready")
        return NameEmbedder(None, "cold")

    monkeypatch.setattr(views, "name_embedder", embedder)
    content = curator.get("/curation/entities/suggestions/").content.decode()
    assert 'hx-get="/curation/entities/suggestions/?embeddings=1" hx-trigger="load"' in content
    assert 'href="/curation/entities/suggestions/?embeddings=1"' in content and "embedding 0." not in content
    assert f'name="first" value="{BABBAGE}"' in content
    partial = curator.get("/curation/entities/suggestions/?embeddings=1", headers={"HX-Request": "true"})
    content = partial.content.decode()
    assert content.lstrip().startswith('<section id="results"') and "hx-trigger" not in content
    assert "embedding 0." in content and loads == [False, True]
    assert len(graph.params_of(cypher.CURATION_SYNONYMS)) == 1  # the htmx partial does not list them again


def test_stored_synonym_edges_are_listed_by_status_with_confirm_and_keep_apart(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch, lab: None
) -> None:
    graph.answers[cypher.CURATION_SUGGESTION_CANDIDATES] = []
    graph.answers[cypher.CURATION_SYNONYMS] = [
        {
            "source": ADA,
            "source_name": f"Cambridge University {SCRIPT}",
            "source_type": "ORG",
            "source_mentions": 3,
            "target": BABBAGE,
            "target_name": "University of Cambridge",
            "target_type": "ORG",
            "target_mentions": 1,
            "score": 0.981,
            "status": "suggested",
        }
    ]
    monkeypatch.setattr(views, "name_embedder", lambda *, load: NameEmbedder(None, "missing"))
    content = curator.get("/curation/entities/suggestions/?synonyms=nonsense").content.decode()
    assert SCRIPT not in content and "University of Cambridge" in content and "0.98" in content
    assert 'name="decision" value="confirm"' in content and 'name="decision" value="reject"' in content
    [params] = graph.params_of(cypher.CURATION_SYNONYMS)
    assert params["statuses"] == ["suggested"] and params["collections"] == ["demo", "lab"]  # an unknown tab: suggested
    curator.get("/curation/entities/suggestions/?synonyms=rejected")
    assert graph.params_of(cypher.CURATION_SYNONYMS)[1]["statuses"] == ["rejected"]

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "synonym_review", recording(calls, Curated(seq=7, applied=True)))
    graph.answers[cypher.CURATION_ENTITY] = [entity_record()]
    response = curator.post(
        "/curation/entities/synonyms/review/", {"source": ADA, "target": BABBAGE, "decision": "reject"}
    )
    assert response["Location"] == "/curation/entities/suggestions/"
    assert calls == [{"driver": graph, "source": ADA, "target": BABBAGE, "confirm": False, "actor": "user:cora"}]
    bad = curator.post("/curation/entities/synonyms/review/", {"source": ADA, "target": BABBAGE, "decision": "merge"})
    assert bad.status_code == 302 and len(calls) == 1  # an unknown decision is refused with a message


def test_the_pair_merge_keeps_the_entity_with_more_mentions(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = FakeDriver({cypher.CURATION_MENTION_COUNTS: [{"id": ADA, "mentions": 2}, {"id": BABBAGE, "mentions": 5}]})
    merged: list[dict[str, Any]] = []
    monkeypatch.setattr(services, "entity_merge", recording(merged, Curated(seq=1, applied=True)))
    services.entity_pair_merge(driver=driver, first=ADA, second=BABBAGE, actor="user:cora")  # type: ignore[arg-type]
    assert (merged[0]["keep"], merged[0]["drop"]) == (BABBAGE, ADA)
    driver.answers[cypher.CURATION_MENTION_COUNTS] = [{"id": ADA, "mentions": 2}]
    with pytest.raises(CurationError, match="no entity"):
        services.entity_pair_merge(driver=driver, first=ADA, second=BABBAGE, actor="x")  # type: ignore[arg-type]


# --- relations -------------------------------------------------------------------------------


def test_the_relations_list_filters_in_the_query(curator: Client, graph: FakeDriver, lab: None) -> None:
    graph.answers.update(
        {
            cypher.CURATION_RELATIONS_PAGE: listing([RELATION]),
            cypher.CURATION_PREDICATES: [{"predicate": "work_with"}],
        }
    )
    response = curator.get("/curation/relations/", {"status": "proposed", "predicate": "work_with", "entity": "Ada"})
    content = response.content.decode()
    assert SCRIPT not in content and "Babbage &lt;script&gt;" in content and '<option value="work_with">' in content
    [params] = graph.params_of(cypher.CURATION_RELATIONS_PAGE)
    assert params == {
        "status": "proposed",
        "predicate": "work_with",
        "entity": "Ada",
        "collections": ["demo", "lab"],
        "skip": 0,
        "limit": 50,
    }
    assert 'name="next" value="/curation/relations/?status=proposed&amp;predicate=work_with&amp;entity=Ada"' in content


@pytest.mark.parametrize(
    ("url", "service", "extra", "text"),
    [
        ("/curation/relations/approve/", "relation_review", {}, "Approved the relation."),
        ("/curation/relations/reject/", "relation_review", {}, "Rejected the relation."),
        ("/curation/relations/remove/", "relation_remove", {}, "Removed the relation."),
        (
            "/curation/relations/predicate/",
            "relation_predicate_set",
            {"new_predicate": "know"},
            "Changed the predicate.",
        ),
    ],
)
def test_relation_actions_go_back_where_they_came_from(
    curator: Client,
    graph: FakeDriver,
    monkeypatch: pytest.MonkeyPatch,
    url: str,
    service: str,
    extra: dict[str, str],
    text: str,
) -> None:
    graph.answers[cypher.CURATION_RELATION_READABLE] = [{"readable": True}]
    graph.answers.update({cypher.CURATION_RELATIONS_PAGE: listing([]), cypher.CURATION_PREDICATES: []})
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(services, service, recording(calls, Curated(seq=11, applied=True)))
    key = {"source": ADA, "predicate": "work_with", "target": BABBAGE}
    response = curator.post(url, {**key, **extra, "next": "/curation/relations/?status=proposed"})
    assert response["Location"] == "/curation/relations/?status=proposed"
    assert calls[0] == {"driver": graph, "actor": "user:cora", **key, **extra, **_approve(url)}
    response = curator.post(url, {**key, **extra, "next": "https://elsewhere.example/"}, follow=True)
    assert response.redirect_chain[0] == ("/curation/relations/", 302)
    assert f"{text} Change-log entry #11." in messages_of(response)[0]


def _approve(url: str) -> dict[str, bool]:
    return {"approve": url.endswith("/approve/")} if url.endswith(("/approve/", "/reject/")) else {}


def test_an_unreadable_relation_is_a_404(curator: Client, graph: FakeDriver, lab: None) -> None:
    graph.answers[cypher.CURATION_RELATION_READABLE] = [{"readable": False}]
    response = curator.post("/curation/relations/remove/", {"source": ADA, "predicate": "p", "target": BABBAGE})
    assert response.status_code == 404


def test_predicates_are_cleaned_like_ingestion_writes_them() -> None:
    assert services._clean_predicate("  Worked  With ") == "worked_with"
    for bad, reason in [("", "empty"), ("x" * 81, "at most"), ("a-b", "letters")]:
        with pytest.raises(CurationError, match=reason):
            services._clean_predicate(bad)


# --- documents -------------------------------------------------------------------------------


def test_documents_are_limited_to_the_readable_collections(curator: Client, lab: None) -> None:
    document("demo", "curie.txt", chunks=3)
    document("lab", "ada.txt", chunks=2, entities=4)
    document("secret", "plans.txt")
    content = curator.get("/curation/documents/").content.decode()
    assert "curie.txt" in content and "ada.txt" in content and "plans.txt" not in content
    assert '<option value="secret">' not in content
    content = curator.get("/curation/documents/", {"collection": "lab", "text": "AD"}).content.decode()
    assert "ada.txt" in content and "curie.txt" not in content
    content = curator.get("/curation/documents/", {"collection": "secret"}).content.decode()
    assert "plans.txt" not in content and 'role="alert"' in content
    assert curator.get(f"/curation/documents/{'secret-plans.txt'.ljust(32, '0')}/delete/").status_code == 404


def test_the_document_delete_preview_lists_what_goes(curator: Client, graph: FakeDriver, lab: None) -> None:
    row = document("lab", "ada.txt")
    graph.answers.update(
        {
            cypher.CURATION_DOCUMENT_PARTS: [{"chunks": 3, "images": 1, "tables": 1, "rows": 4}],
            cypher.CURATION_DOCUMENT_ENTITIES_RELEASED: [
                {"mentioned": 5, "released": 1, "entities": [{"id": ADA, "name": SCRIPT, "type": "PERSON"}]}
            ],
            cypher.CURATION_DOCUMENT_RELATIONS_RELEASED: [{"supported": 4, "released": 2}],
        }
    )
    content = curator.get(f"/curation/documents/{row.id}/delete/").content.decode()
    assert "<strong>3</strong> chunks" in content and "<strong>4</strong> table rows" in content
    assert "<strong>1</strong> image," in content and "<strong>1</strong> of the 5 entities" in content
    assert "<strong>2</strong> of the 4 relations" in content and "&lt;script&gt;" in content and SCRIPT not in content
    assert graph.params_of(cypher.CURATION_DOCUMENT_ENTITIES_RELEASED) == [{"document_id": row.id, "limit": 100}]


def test_deleting_a_document_calls_the_ingest_service_and_links_the_entry(
    curator: Client, graph: FakeDriver, lab: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = document("lab", "ada.txt")
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(views, "document_delete", recording(calls, True))
    monkeypatch.setattr(pages, "document_deletion_entry", lambda document_id: 12)
    response = curator.post(f"/curation/documents/{row.id}/delete/", follow=True)
    assert calls == [{"driver": graph, "document_id": row.id, "actor": "user:cora"}]
    assert response.redirect_chain == [("/curation/documents/", 302)]
    assert messages_of(response) == ['Deleted lab/ada.txt. <a href="/audit/log/12/">Change-log entry #12</a>.']


# --- CSRF and Neo4j down ---------------------------------------------------------------------


@pytest.mark.parametrize("url", POSTS)
def test_every_action_needs_the_csrf_token(
    curator_user: User, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator_user)
    response = client.post(url, {"name": "x", "alias": "x", "keep": ADA, "drop": BABBAGE})
    assert response.status_code == 403 and graph.calls == []


@pytest.mark.parametrize(
    "error",
    [
        neo4j.exceptions.ServiceUnavailable("connection refused"),
        neo4j.exceptions.SessionExpired("gone"),
        neo4j.exceptions.DriverError("pool closed"),
        ConnectionRefusedError(111, "refused"),
    ],
)
@pytest.mark.parametrize("url", ["/curation/entities/", f"/curation/entities/{ADA}/", "/curation/relations/"])
def test_neo4j_out_of_reach_is_a_503_page(
    curator: Client, monkeypatch: pytest.MonkeyPatch, error: Exception, url: str
) -> None:
    monkeypatch.setattr(views, "get_driver", lambda: DownDriver(error))
    response = curator.get(url)
    assert response.status_code == 503
    content = response.content.decode()
    assert "Neo4j knowledge graph is not available" in content and "Traceback" not in content


def test_a_post_with_neo4j_down_is_a_503_too(curator: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views, "get_driver", lambda: DownDriver(neo4j.exceptions.ServiceUnavailable("down")))
    assert curator.post(f"/curation/entities/{ADA}/rename/", {"name": "X"}).status_code == 503


# --- page logic ------------------------------------------------------------------------------


def test_snippets_cut_at_spaces_around_the_mention() -> None:
    text = "word " * 40 + "Ada Lovelace" + " more" * 40
    start = text.index("Ada")
    cut = snippet(text, start, start + 12, context=20)
    assert cut["mention"] == "Ada Lovelace"
    assert cut["before"].startswith("…") and not cut["before"].startswith("… ") and cut["after"].endswith("…")
    assert len(cut["before"]) <= 21 and len(cut["after"]) <= 21
    assert snippet("Ada.", 0, 3) == {"before": "", "mention": "Ada", "after": "."}
    assert snippet("short text", None, None) == {"before": "", "mention": "", "after": "short text"}
    assert snippet("abc", 2, 9)["mention"] == ""


def test_listing_pages() -> None:
    page = Listing(rows=[], total=101, number=2, size=50)
    assert (page.num_pages, page.has_previous, page.has_next, page.has_other_pages) == (3, True, True, True)
    assert Listing(rows=[], total=0, number=1).num_pages == 1
    assert [page_number(v) for v in (None, "", "3", "-1", "x", 4)] == [1, 1, 3, 1, 1, 4]


def test_relation_evidence_is_the_sentence_both_ends_are_named_in() -> None:
    from apps.graph.evidence import EVIDENCE_CHARS, relation_evidence

    text = "Ada met Charles.  Charles built  the engine. Later."
    assert relation_evidence({"evidence_text": text, "evidence_start": 18, "evidence_end": 44}) == (
        "Charles built the engine."
    )
    assert relation_evidence({"evidence_text": "a row: x; y", "evidence_start": None, "evidence_end": None}) == (
        "a row: x; y"
    )  # a table row has no sentences: its whole text
    assert relation_evidence({"evidence_text": None}) == ""
    long = relation_evidence({"evidence_text": "word " * 200})
    assert len(long) == EVIDENCE_CHARS and long.endswith("…")


def test_a_dismissed_pair_is_no_longer_suggested_until_restored(
    curator: Client, graph: FakeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.curation.models import DismissedSuggestion

    graph.answers[cypher.CURATION_SUGGESTION_CANDIDATES] = [
        {"id": ADA, "name": "Ada Lovelace", "type": "PERSON", "aliases": [], "mentions": 2},
        {"id": BABBAGE, "name": "Ada Lovelace (2)", "type": "PERSON", "aliases": [], "mentions": 5},
    ]
    graph.answers[cypher.CURATION_SYNONYMS] = []
    graph.answers[cypher.CURATION_NAMES_OF] = [{"id": ADA, "name": "Ada Lovelace"}, {"id": BABBAGE, "name": "Ada (2)"}]
    entity_graph(graph)
    monkeypatch.setattr(
        views, "name_embedder", lambda *, load: NameEmbedder(lambda t: hashing_embed(list(t), dim=32), "ready")
    )
    assert f'name="first" value="{BABBAGE}"' in curator.get("/curation/entities/suggestions/").content.decode()
    response = curator.post("/curation/entities/suggestions/dismiss/", {"first": BABBAGE, "second": ADA}, follow=True)
    assert "Dismissed: “Ada Lovelace” and “Ada (2)” are no longer suggested" in messages_of(response)[0]
    [dismissed] = DismissedSuggestion.objects.all()
    assert (dismissed.first, dismissed.second, dismissed.actor) == (min(ADA, BABBAGE), max(ADA, BABBAGE), "user:cora")
    page = curator.get("/curation/entities/suggestions/").content.decode()
    assert "No likely duplicates" in page and '<h2 id="dismissed">Dismissed</h2>' in page
    curator.post("/curation/entities/suggestions/restore/", {"first": ADA, "second": BABBAGE})
    assert not DismissedSuggestion.objects.exists()
    assert f'name="first" value="{BABBAGE}"' in curator.get("/curation/entities/suggestions/").content.decode()


def test_a_relation_row_links_its_evidence_sentence_in_the_viewer() -> None:
    document = "d" * 32
    row = pages.relation_row(
        {
            "evidence_text": "Ada met Babbage. They wrote.",
            "evidence_start": 0,
            "evidence_end": 16,
            "evidence_unit": "chunk-1",
            "evidence_document_id": document,
            "evidence_document": "lab/ada.txt",
            "documents": 2,
        }
    )
    assert row["evidence"] == "Ada met Babbage."
    assert row["evidence_url"] == f"/documents/{document}/?unit=chunk-1&start=0&end=16#cited"
    unreadable = pages.relation_row({"evidence_text": None, "evidence_document_id": None, "documents": 0})
    assert (unreadable["evidence"], unreadable["evidence_url"]) == ("", "")

"""Answering against the real Neo4j, FAISS indexes, models and Redis: stages, access, API, faults."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client
from neo4j import Driver, GraphDatabase
from pytest_django.fixtures import Settings

from apps.accounts.services import collection_ensure
from apps.answers.answer_text import answer_clean
from apps.answers.generation import answer_claim, answer_generate
from apps.answers.models import Answer
from apps.answers.pipeline import RetrievalTools, retrieve
from apps.answers.prompt import NOT_FOUND
from apps.answers.ranker import FEATURES
from apps.answers.services import GRAPH_DOWN, answer_ask
from apps.answers.tools import default_tools, retrieval_params
from apps.answers.types import STAGES, AnswerError
from apps.core.admission import Busy
from apps.core.workers import consumers_forget
from apps.graph.identity import TITLE_LABEL, entity_id, entity_key
from apps.ingest.services import default_extractor, document_delete, upload_ingest
from apps.ledger.models import ChangeEntry
from apps.models.registry import generator
from apps.observability.tracing import finished_spans, tracing_reset
from apps.provenance.models import AttributionRecord
from tests.support import free_port, manage, queue_purge

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

JOURNAL = "The Journal of Moss Studies is published by the Bryological Society of Wales."
SOCIETY = "The Bryological Society of Wales was founded in 1912. Its first president was Gwendolyn Pryce."
DISTRACTORS = {
    "tea.txt": "Green tea is grown on the slopes of Darjeeling and picked in spring.",
    "bridge.txt": "The Severn Bridge carries the motorway across the estuary near Bristol.",
    "comet.txt": "Halley's Comet returns to the inner Solar System every seventy-six years.",
}
QUESTION = "Who was the first president of the society that publishes the Journal of Moss Studies?"


@pytest.fixture(autouse=True)
def vectors_dir(tmp_path: Path, settings: Settings) -> Path:
    settings.VECTORS_DIR = tmp_path / "vectors"
    return Path(settings.VECTORS_DIR)


def ingest(driver: Driver, files: dict[str, str], collection: str) -> dict[str, str]:
    ids = {}
    for name, text in files.items():
        [outcome] = upload_ingest(
            driver=driver, name=name, data=text.encode(), collection=collection, extractor=default_extractor()
        )
        ids[name] = str(outcome.document_id)
    return ids


@pytest.fixture
def corpus(empty_graph: Driver) -> dict[str, str]:
    ids = ingest(empty_graph, {"journal.txt": JOURNAL, "society.txt": SOCIETY, **DISTRACTORS}, "moss")
    collection_ensure(name="moss", public=True)  # the API and search page tests ask without logging in
    return ids


@pytest.fixture
def tools() -> RetrievalTools:
    return default_tools()


def one_seed(settings: Settings) -> None:
    """One dense seed and no lexical ones: what the expansion adds is then all that differs."""
    settings.ANSWER_K_CHUNKS = 1
    settings.ANSWER_LEXICAL_K = 0


def test_graph_expansion_reaches_the_second_hop_that_dense_retrieval_misses(
    corpus: dict[str, str], tools: RetrievalTools, settings: Settings
) -> None:
    one_seed(settings)
    dense = retrieve(question=QUESTION, collections=["moss"], tools=tools, params=retrieval_params(mode="dense"))
    assert [c.document for c in dense.candidates] == ["journal.txt"]

    graph = retrieve(question=QUESTION, collections=["moss"], tools=tools, params=retrieval_params(mode="graph"))
    by_document = {c.document: c for c in graph.candidates}
    assert {"journal.txt", "society.txt"} <= set(by_document)
    society = by_document["society.txt"]
    best = society.paths[0]
    assert best.nodes[0] == by_document["journal.txt"].node_id and best.nodes[-1] == society.node_id
    assert best.relationships == ("MENTIONS", "MENTIONS")
    assert graph.stats["rows"] > 0 and graph.stats["cypher_ms"] > 0
    assert set(graph.timings_ms) == set(STAGES) - {"generation"}
    cited = [source.document for source in graph.sources]
    assert "society.txt" in cited and "Gwendolyn Pryce" in graph.prompt.user
    # The learned ranker ordered the pool: every candidate carries the features it scored.
    assert tools.ranker is not None
    assert all(c.features is not None and c.features.shape == (len(FEATURES),) for c in graph.candidates)


def test_expansion_never_leaves_the_allowed_collections(
    empty_graph: Driver, tools: RetrievalTools, settings: Settings
) -> None:
    ingest(empty_graph, {"journal.txt": JOURNAL, **DISTRACTORS}, "public")
    ingest(empty_graph, {"society.txt": SOCIETY}, "private")
    one_seed(settings)
    graph = retrieve(question=QUESTION, collections=["public"], tools=tools, params=retrieval_params())
    assert {c.collection for c in graph.candidates} == {"public"}
    assert all("Gwendolyn" not in c.text for c in graph.candidates)
    both = retrieve(question=QUESTION, collections=["public", "private"], tools=tools, params=retrieval_params())
    assert "society.txt" in {c.document for c in both.candidates}


FILM = "Blue Lantern Harbour (film)\n\nThe picture was shot in 1987 on the coast near Ålesund and won a prize in Oslo."
FILM_DISTRACTORS = {
    "harbours.txt": "Harbours along the coast of Norway were lit by lanterns before electric lights came.",
    "lanterns.txt": "A blue lantern signals a harbour entrance to ships arriving at night in fog.",
    "films.txt": "Many films of the 1980s were shot on location along the northern coasts.",
}


def test_a_title_the_question_names_links_and_its_words_seed_the_search(
    empty_graph: Driver, tools: RetrievalTools, settings: Settings
) -> None:
    """The film's title is an entity its passage is about; the question's capitalised span links to it,
    and the full-text index finds the passage by its rare words, where no spaCy name is needed."""
    settings.ANSWER_K_CHUNKS = 1
    ids = ingest(empty_graph, {"Blue Lantern Harbour (film).txt": FILM, **FILM_DISTRACTORS}, "films")
    question = "In which year was Blue Lantern Harbour shot?"
    graph = retrieve(question=question, collections=["films"], tools=tools, params=retrieval_params())
    assert any(name == "Blue Lantern Harbour" for _, name in graph.analysis.linked)
    film = next(c for c in graph.candidates if c.document == "Blue Lantern Harbour (film).txt")
    assert graph.candidates[0] is film
    assert film.lexical_score > 0 and any(seed.lexical > 0 for seed in graph.seeds.hits)
    title = entity_id(entity_key("Blue Lantern Harbour", TITLE_LABEL))
    assert title in {entity for entity, _ in graph.analysis.linked}  # the page's title entity
    ablated = dataclasses.replace(retrieval_params(), lexical=dataclasses.replace(retrieval_params().lexical, k=0))
    plain = retrieve(question=question, collections=["films"], tools=tools, params=ablated)
    assert all(seed.lexical == 0 for seed in plain.seeds.hits)
    assert retrieve(question=question, collections=["other"], tools=tools, params=retrieval_params()).candidates == []

    document_delete(driver=empty_graph, document_id=ids["Blue Lantern Harbour (film).txt"])
    after = retrieve(question=question, collections=["films"], tools=tools, params=retrieval_params())
    assert after.analysis.linked == () and "Blue Lantern Harbour (film).txt" not in {
        c.document for c in after.candidates
    }


UNIVERSITY = {
    "edsac.txt": "Maurice Wilkes built EDSAC at the University of Cambridge in 1949.",
    "founding.txt": "Cambridge University was founded in 1209 by scholars who had left Oxford.",
    "rowing.txt": "Rowing crews train on the river before sunrise in spring.",
}


def test_a_synonym_edge_carries_the_expansion_from_one_name_to_another(
    empty_graph: Driver, tools: RetrievalTools, settings: Settings
) -> None:
    one_seed(settings)
    ingest(empty_graph, UNIVERSITY, "uni")
    question = "When was the university where Maurice Wilkes built EDSAC founded?"
    graph = retrieve(question=question, collections=["uni"], tools=tools, params=retrieval_params())
    by_document = {c.document: c for c in graph.candidates}
    assert graph.seeds.hits[0].node_id == by_document["edsac.txt"].node_id
    founding = by_document["founding.txt"]
    assert any(path.relationships == ("MENTIONS", "SYNONYM", "MENTIONS") for path in founding.paths)

    settings.ANSWER_SYNONYM_MIN_SCORE = 2.0  # the switch: no synonym edge is crossed
    off = retrieve(question=question, collections=["uni"], tools=tools, params=retrieval_params())
    assert all("SYNONYM" not in path.relationships for c in off.candidates for path in c.paths)


def ask_moss(tools: RetrievalTools, *, generate: bool) -> dict[str, Any]:
    """The test question over the "moss" collection, in graph mode, as an anonymous asker."""
    return answer_ask(
        question=QUESTION,
        collections=["moss"],
        generate=generate,
        mode="graph",
        user=None,
        tools=tools,
        params=retrieval_params(),
    )


def test_every_stage_is_traced_under_the_request_span(corpus: dict[str, str], tools: RetrievalTools) -> None:
    tracing_reset()
    ask_moss(tools, generate=False)
    spans = {span.name: span for span in finished_spans()}
    ask = spans["ask"]
    for stage in ("analysis", "embed", "vector_search", "graph_expansion", "rerank", "selection", "assembly"):
        span = spans[f"ragkg.{stage}"]
        assert span.parent is not None and span.parent.span_id == ask.context.span_id
    expansion = dict(spans["ragkg.graph_expansion"].attributes or {})
    assert expansion["ragkg.hops"] == 3
    assert float(str(expansion["ragkg.nodes_touched"])) > 0 and float(str(expansion["ragkg.cypher_ms"])) > 0


def post(client: Client, body: Any, content_type: str = "application/json") -> Any:
    return client.post(
        "/api/ask", data=json.dumps(body) if content_type == "application/json" else body, content_type=content_type
    )


def test_api_returns_the_ranked_evidence_without_generation(corpus: dict[str, str]) -> None:
    response = post(Client(), {"question": QUESTION, "collections": ["moss"], "generate": False})
    assert response.status_code == 200
    result = response.json()
    assert result["answer"] == "" and result["state"] == "done"
    assert set(result["timings_ms"]) == set(STAGES)
    first = result["sources"][0]
    assert {"id", "kind", "document", "text", "score", "paths"} <= set(first)
    assert first["kind"] == "chunk" and all(isinstance(path, list) for path in first["paths"])
    assert [s["score"] for s in result["sources"]] == sorted((s["score"] for s in result["sources"]), reverse=True)
    stored = Answer.objects.get(id=result["answer_id"])
    assert stored.sources == result["sources"] and not stored.generate
    # The answer stands on the change log: its size then, and the entry that brought each source in.
    entries = {row.ref: row for row in ChangeEntry.objects.filter(action="document.ingested")}
    assert result["ledger"]["tree_size"] == ChangeEntry.objects.count() == len(corpus)
    for source in result["sources"]:
        logged = result["ledger"]["sources"][source["document_id"]]
        entry = entries[source["document_id"]]
        assert logged == {"seq": entry.seq, "leaf_hash": entry.leaf_hash}


def test_api_rejects_bad_requests_with_a_clear_message() -> None:
    client = Client()
    assert "JSON" in post(client, "question=hi", content_type="application/x-www-form-urlencoded").json()["error"]
    assert post(client, {"q": "hi"}).json()["error"].startswith('the body must be a JSON object with a "question"')
    empty = post(client, {"question": "   ", "generate": False})
    assert empty.status_code == 400 and empty.json()["error"] == "Please type a question."
    assert post(client, {"question": "x", "mode": "sideways"}).status_code == 400
    assert client.get("/api/ask").status_code == 405


def test_neo4j_down_gives_a_clear_message(corpus: dict[str, str], tools: RetrievalTools) -> None:
    dead = GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"), connection_timeout=1)
    try:
        with pytest.raises(AnswerError) as raised:
            ask_moss(dataclasses.replace(tools, driver=dead), generate=True)
    finally:
        dead.close()
    assert raised.value.message == GRAPH_DOWN and raised.value.stage == "graph_expansion"


def test_no_generation_worker_refuses_the_question_at_once_and_says_why(
    corpus: dict[str, str], tools: RetrievalTools, settings: Settings
) -> None:
    settings.ANSWER_GENERATION_QUEUE = "gpu-nobody-consumes"
    settings.ANSWER_QUEUE_TIMEOUT = 1.0
    queue_purge(settings.ANSWER_GENERATION_QUEUE)
    consumers_forget()
    started = time.monotonic()
    with pytest.raises(Busy, match="No generation worker is running") as refused:
        ask_moss(tools, generate=True)
    assert time.monotonic() - started < 15
    assert "'gpu-nobody-consumes' queue" in str(refused.value)
    assert not Answer.objects.exists(), "nothing is recorded for a question no worker can take"
    evidence = ask_moss(tools, generate=False)
    assert evidence["sources"], "questions without generation still work"


def serve_generation(stop: threading.Event) -> None:
    """A stand-in gpu worker in this process (the test database is not the real worker's)."""
    while not stop.is_set():
        try:  # the test's in-memory SQLite can be busy with the test's own thread for a moment: try again
            waiting = [str(answer.id) for answer in Answer.objects.filter(state=Answer.RETRIEVED)]
        except OperationalError:
            waiting = []
        for answer_id in waiting:
            try:
                claimed = answer_claim(answer_id)
            except OperationalError:
                continue
            if claimed:
                answer_generate(answer_id=answer_id, load_engine=generator)
        time.sleep(0.05)


@contextmanager
def stand_in_worker(settings: Settings) -> Iterator[None]:
    """Generation served by a thread of this process, on a queue no real worker consumes."""
    settings.ANSWER_GENERATION_QUEUE = "gpu-in-this-test"
    queue_purge(settings.ANSWER_GENERATION_QUEUE)  # its messages are never consumed: the thread reads the database
    stop = threading.Event()
    worker = threading.Thread(target=serve_generation, args=(stop,), daemon=True)
    worker.start()
    try:
        # no Celery worker consumes the queue, so admission's worker check is told of the thread
        with mock.patch("apps.answers.admission.queue_unserved", return_value=False):
            yield
    finally:
        stop.set()
        worker.join(timeout=60)
        queue_purge(settings.ANSWER_GENERATION_QUEUE)


def test_api_streams_tokens_then_the_whole_answer(corpus: dict[str, str], settings: Settings) -> None:
    with stand_in_worker(settings):
        response = post(Client(), {"question": QUESTION, "collections": ["moss"], "stream": True})
        assert response["Content-Type"] == "application/x-ndjson"
        events = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    kinds = [event["event"] for event in events]
    assert kinds[0] == "retrieval" and kinds[-1] == "done" and "token" in kinds
    assert events[0]["sources"] and events[0]["answer"] == ""
    done = events[-1]
    assert done["state"] == "done" and done["answer"] and not done["not_found"]
    # the final text came before attribution finished, as it is kept (the citations come with "done")
    [generated] = [event for event in events if event["event"] == "generated"]
    assert kinds.index("generated") > max(i for i, kind in enumerate(kinds) if kind == "token")
    assert generated["answer"] == done["generated"] and generated["not_found"] is False
    # what was streamed, without the labels answer_clean takes off, is what was kept and attributed
    assert answer_clean("".join(e["text"] for e in events if e["event"] == "token")) == done["generated"]
    assert done["generation"]["tokens"] > 0 and done["timings_ms"]["generation"] > 0
    assert_token_provenance(done)


def test_search_page_answers_with_citations_and_stores_token_provenance(
    corpus: dict[str, str], settings: Settings
) -> None:
    with stand_in_worker(settings):
        page = Client().post("/ask/", {"question": QUESTION, "collection": "moss"})
        missing = Client().post("/ask/", {"question": "Where is the Severn Bridge?", "collection": "nothing-here"})
    assert page.status_code == 200
    answer = Answer.objects.get(question=QUESTION)
    assert answer.state == Answer.DONE and answer.generated
    assert AttributionRecord.objects.filter(answer=answer, mode="fast").exists()
    html = page.content.decode()
    assert f'href="/ask/{answer.id}/"' in html and "society.<wbr>txt" in html
    assert f"/audit/answers/{answer.id}/" not in html, "the audit page is linked for auditors only"
    for citation in answer.citations:
        assert f'href="#source-{citation["sources"][0]}"' in html
    assert "nothing-here is not a collection you may read." in missing.content.decode()  # the picker's choices


def test_a_question_the_collection_does_not_cover_is_not_found_without_generating(
    corpus: dict[str, str], tools: RetrievalTools, settings: Settings
) -> None:
    settings.ANSWER_MIN_COVERAGE = 0.5
    with stand_in_worker(settings):
        result = answer_ask(
            question="Which radio station in Leicester first played Kasabian?",
            collections=["moss"],
            generate=True,
            mode="graph",
            user=None,
            tools=tools,
            params=retrieval_params(),
        )
        covered = ask_moss(tools, generate=True)
    assert result["state"] == "not_found" and result["not_found"] and result["answer"] == NOT_FOUND
    assert result["sources"], "the closest sources are still shown"
    assert result["generation"] == {} and "do not cover the question" in result["reason"] and not result["error"]
    assert Answer.objects.get(id=result["answer_id"]).stats["evidence"]["coverage"] < 0.5
    assert not covered["not_found"] and covered["generated"]


def assert_token_provenance(result: dict[str, Any]) -> None:
    """Every answer token points into the answer text, and its sources at sentences of the answer's sources."""
    tokens, answer = result["tokens"], result["answer"]
    assert tokens and result["timings_ms"]["attribution"] > 0
    texts = {source["id"]: source["text"] for source in result["sources"]}
    for token in tokens:
        assert answer[token["start"] : token["end"]] == token["text"]
        scores = [support["score"] for support in token["sources"]]
        assert scores == sorted(scores, reverse=True)
        for support in token["sources"]:
            assert support["id"] in texts and 0 <= support["start"] < support["end"] <= len(texts[support["id"]])
    assert sum(bool(token["sources"]) for token in tokens) >= 0.9 * len(tokens)
    for citation in result["citations"]:  # "[n]" markers follow from the token scores
        marker = answer[citation["marker_start"] : citation["marker_end"]].strip()
        assert marker == "".join(f"[{n}]" for n in citation["sources"])


def test_ask_json_answers_through_the_gpu_worker(live_services: None, tmp_path: Path) -> None:
    """End to end: ingestion and generation by the real Celery worker, the question from the command line."""
    collection = f"ask-{uuid.uuid4().hex[:10]}"
    for name, text in {"journal.txt": JOURNAL, "society.txt": SOCIETY, **DISTRACTORS}.items():
        (tmp_path / name).write_text(text)
    ingested = manage("ingest", str(tmp_path), "--collection", collection, "--wait", "--json")
    assert ingested.returncode == 0, ingested.stderr
    run = manage("ask", QUESTION, "--collection", collection, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["state"] == "done" and result["answer"].strip()
    assert {source["document"] for source in result["sources"]} >= {f"{tmp_path.name}/society.txt"}
    assert all(source["paths"] for source in result["sources"])
    assert result["timings_ms"]["generation"] > 0 and result["generation"]["tokens"] > 0
    assert set(STAGES) <= set(result["timings_ms"])
    assert_token_provenance(result)

    retrieval_only = json.loads(manage("ask", QUESTION, "--collection", collection, "--no-generate", "--json").stdout)
    assert retrieval_only["answer"] == "" and retrieval_only["sources"] == result["sources"]
    empty = manage("ask", "   ", "--json")
    assert empty.returncode == 1 and json.loads(empty.stdout)["error"] == "Please type a question."


def test_a_repeated_question_comes_from_the_cache_until_a_cited_document_is_deleted(
    corpus: dict[str, str], tools: RetrievalTools, settings: Settings, empty_graph: Driver
) -> None:
    settings.ANSWER_CACHE = True
    settings.MAX_GPU_QUEUE = 10  # the stand-in worker reads the database; the queue's messages stay unread
    with stand_in_worker(settings):
        fresh = ask_moss(tools, generate=True)  # the corpus was logged a moment ago: not cached (settling)
        assert ask_moss(tools, generate=True)["cached_from"] is None
        settings.ANSWER_CACHE_SETTLE_SECONDS = 0
        first = ask_moss(tools, generate=True)
        again = ask_moss(tools, generate=True)
    assert fresh["state"] == first["state"] == "done" and first["cached_from"] is None
    assert again["cached_from"] == first["answer_id"] and again["answer_id"] != first["answer_id"]
    assert (again["answer"], again["sources"], again["tokens"]) == (first["answer"], first["sources"], first["tokens"])
    assert again["timings_ms"]["cache"] < 1000, again["timings_ms"]
    assert corpus["society.txt"] in {source["document_id"] for source in first["sources"]}

    assert document_delete(driver=empty_graph, document_id=corpus["society.txt"], actor="curator:cy")
    with stand_in_worker(settings):
        after = ask_moss(tools, generate=True)
    assert after["cached_from"] is None and after["answer_id"] not in (first["answer_id"], again["answer_id"])
    assert corpus["society.txt"] not in {source["document_id"] for source in after["sources"]}

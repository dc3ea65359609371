"""The provenance audit pages: who may see them, the answer page with its token spans and
sources (all text escaped), the list filters, the JSON export and the exact-attribution button."""

from __future__ import annotations

import datetime
import hashlib
import json
import re
import uuid
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser, Group, User
from django.test import Client

from apps.answers.expansion import question_entity_ids
from apps.answers.models import Answer
from apps.core import workers
from apps.provenance import runs, services
from apps.provenance.access import can_audit
from apps.provenance.citations import cite
from apps.provenance.models import AttributionRecord, ExactRun
from apps.provenance.pages import answer_segments
from apps.provenance.storage import attribution_pack
from apps.provenance.types import Attribution, TokenSpan
from apps.provenance.units import source_units

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
GENERATED = "Marie Curie was born in Warsaw. She worked at the Radium Institute in Paris."
BIOGRAPHY_ID = "d" * 32
INSTITUTE_ID = "e" * 32


# --- data ------------------------------------------------------------------------------------


def chunk(number: int, document: str, document_id: str, sentences: list[str], **extra: Any) -> dict[str, Any]:
    """A chunk source as ``Source.as_dict`` stores it, with its sentences' offsets."""
    text = " ".join(sentences)
    offsets, position = [], 0
    for sentence in sentences:
        offsets.append([position, position + len(sentence)])
        position += len(sentence) + 1
    return {
        "id": f"chunk{number}".ljust(32, "0"),
        "number": number,
        "kind": "chunk",
        "document": document,
        "document_id": document_id,
        "collection": "demo",
        "text": text,
        "score": 0.9 - number / 10,
        "paths": [],
        "path_details": [],
        "sentences": offsets,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "scores": {"seed": 0.71, "rerank": 0.64, "graph_support": 0.3},
        **extra,
    }


def demo_sources() -> list[dict[str, Any]]:
    entity = question_entity_ids(["Marie Curie"])[0]
    biography = chunk(
        1,
        "curie/biography.txt",
        BIOGRAPHY_ID,
        ["Marie Skłodowska Curie was born in Warsaw in 1867.", "She later moved to Paris."],
    )
    institute = chunk(
        2,
        "radium/institute.txt",
        INSTITUTE_ID,
        [f"The Radium Institute in Paris opened in 1914 {SCRIPT}.", "Curie directed its laboratory."],
        path_details=[{"nodes": [entity, "chunk2".ljust(32, "0")], "relationships": ["MENTIONS"], "score": 0.42}],
    )
    institute["paths"] = [d["nodes"] for d in institute["path_details"]]
    row_text = "prizes.xlsx / Nobel, row 3: laureate: Marie Curie; year: 1903; field: Physics."
    prizes = {
        **chunk(3, "prizes.xlsx", "f" * 32, [row_text]),
        "kind": "row",
        "sentences": [],
    }
    return [biography, institute, prizes]


def unit_index(sources: list[dict[str, Any]], source: int, index: int) -> int | None:
    units = source_units(sources)
    return next((i for i, u in enumerate(units) if (u.source, u.index) == (source, index)), None)


def attribution(sources: list[dict[str, Any]], mode: str, *, second: float) -> Attribution:
    """Sentence 1 of the answer leans on the first source, sentence 2 on the second (the first
    when there is one source); "Paris" also on the first source's second sentence."""
    tokens = [TokenSpan(m.group(0), m.start(), m.end()) for m in re.finditer(r"\s?\w+|[^\w\s]", GENERATED)]
    units = source_units(sources)
    scores = np.zeros((len(tokens), len(units)), dtype=np.float32)
    split = GENERATED.index("She")
    weights = {
        True: [(unit_index(sources, 0, 0), 0.8), (unit_index(sources, 2, 1), 0.1)],  # 0.1: the "year" cell
        False: [(unit_index(sources, min(1, len(sources) - 1), 0), 0.7)],
    }
    for row, token in enumerate(tokens):
        extra = [(unit_index(sources, 0, 1), second)] if "Paris" in token.text else []
        for unit, score in weights[token.start < split] + extra:
            if unit is not None:
                scores[row, unit] = score
    return Attribution(mode, "test-method", "test-model", tokens, units, scores, 1, 0.01)


def make_answer(
    *,
    question: str = "Where was Marie Curie born?",
    user: User | None = None,
    exact: bool = False,
    sources: list[dict[str, Any]] | None = None,
) -> Answer:
    sources = sources if sources is not None else demo_sources()
    fast = attribution(sources, "fast", second=0.5)
    cited = cite(GENERATED, fast)
    answer = Answer.objects.create(
        question=question,
        user=user,
        state=Answer.DONE,
        answer=cited.text,
        generated=GENERATED,
        citations=cited.citations,
        sources=sources,
        analysis={"language": "en", "tokens": 7, "entropy": 2.8, "entities": ["Marie Curie"]},
        seeds=[{"id": sources[0]["id"], "label": "Chunk", "score": 0.81, "space": "text"}],
        timings_ms={"queue": 3.0, "generation": 900.0, "graph_expansion": 12.5, "analysis": 1.5, "embed": 4.0},
        stats={"candidates": 17, "paths": 9},
        generation={"tokens": 18, "seconds": 0.9, "tokens_per_second": 20.0},
        model_names={"generator": "tiny-generator", "embedder": "all-MiniLM-L6-v2"},
        finished_at=datetime.datetime.now(datetime.UTC),
    )
    AttributionRecord.objects.create(
        answer=answer,
        mode="fast",
        method=fast.method,
        model=fast.model,
        tokens=len(fast.tokens),
        payload=attribution_pack(fast, offset_map=cited.token_offsets),
    )
    if exact:
        slow = attribution(sources, "exact", second=0.9)
        AttributionRecord.objects.create(
            answer=answer,
            mode="exact",
            method="ablation",
            model=slow.model,
            tokens=len(slow.tokens),
            forward_passes=32,
            payload=attribution_pack(slow, offset_map=cited.token_offsets),
            summary={"agreement": {"tokens": 17, "top1_agreement": 0.75, "top1_in_exact_top3": 1.0}},
        )
    return answer


def page_data(content: str) -> dict[str, Any]:
    match = re.search(r'<script id="audit-data" type="application/json">(.*?)</script>', content, re.S)
    assert match, "the page carries its token data as JSON"
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def listed(response: Any) -> list[str]:
    return re.findall(r'href="/audit/answers/([0-9a-f-]{36})/"', response.content.decode())


# --- personas ------------------------------------------------------------------------------


# --- access ----------------------------------------------------------------------------------


def test_only_superusers_and_auditors_may_audit() -> None:
    auditor = User.objects.create_user("a")
    auditor.groups.add(Group.objects.get_or_create(name="auditor")[0])
    assert can_audit(auditor)
    assert can_audit(User.objects.create_superuser("root"))
    assert not can_audit(User.objects.create_user("staff", is_staff=True))
    assert not can_audit(AnonymousUser())


def test_visitors_are_sent_to_log_in(client: Client) -> None:
    answer = make_answer()
    for url in ("/audit/answers/", f"/audit/answers/{answer.id}/", f"/audit/answers/{answer.id}/export.json"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={url}"
    assert client.post(f"/audit/answers/{answer.id}/exact/").status_code == 302


def test_users_without_the_auditor_role_get_a_plain_403(outsider: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = make_answer(question="A private question about Warsaw?")
    monkeypatch.setattr(runs, "exact_request", lambda answer, **_: pytest.fail("must not be queued"))
    urls = ["/audit/answers/", f"/audit/answers/{answer.id}/", f"/audit/answers/{answer.id}/export.json"]
    posts = [outsider.post(f"/audit/answers/{answer.id}/exact/{action}") for action in ("", "cancel/")]
    for response in [*(outsider.get(url) for url in urls), *posts]:
        assert response.status_code == 403
        content = response.content.decode()
        assert "needs the auditor role" in content and "otto" in content
        assert "A private question" not in content


def test_an_unknown_answer_is_404(auditor: Client) -> None:
    missing = uuid.uuid4()
    assert auditor.get(f"/audit/answers/{missing}/").status_code == 404
    assert auditor.get(f"/audit/answers/{missing}/export.json").status_code == 404


# --- the answer page ----------------------------------------------------------------------


def test_the_answer_page_shows_tinted_tokens_citations_and_sources(auditor: Client) -> None:
    answer = make_answer()
    response = auditor.get(f"/audit/answers/{answer.id}/")
    assert response.status_code == 200
    content = response.content.decode()
    data = page_data(content)
    spans = re.findall(r'<span class="tok (src-\d|none)" tabindex="0" data-token="(\d+)">([^<]*)</span>', content)
    assert len(spans) == len(data["tokens"]) == 16
    assert spans[0] == ("src-0", "0", "Marie")  # tinted by source 1
    assert spans[-2][:2] == ("src-1", "14") and spans[-2][2].strip() == "Paris"  # tinted by source 2
    assert '<a class="cite" href="#source-1">[1]</a>' in content
    assert '<a class="cite" href="#source-2">[2]</a>' in content
    assert 'id="source-3"' in content and "Marie Skłodowska Curie was born in Warsaw in 1867." in content
    # Token data for the panel: supports with the sentence offsets inside the source text.
    paris = data["tokens"][14]
    assert [(s["number"], s["sentence"]) for s in paris["supports"]] == [(2, 0), (1, 1)]
    biography = data["sources"][0]["text"]
    assert biography[paris["supports"][1]["start"] : paris["supports"][1]["end"]] == "She later moved to Paris."
    assert paris["supports"][0]["exact"] is None and data["exact"] is False
    # The graph path is readable; the trace follows the stage order, then the queue.
    assert "Marie Curie (from the question)" in content and "—MENTIONS—" in content
    timings = content[content.index("Retrieval trace") :]
    positions = [
        timings.index(f"<td>{stage}</td>") for stage in ("analysis", "embed", "graph_expansion", "generation", "queue")
    ]
    assert positions == sorted(positions)
    assert f"/audit/answers/?document={BIOGRAPHY_ID}" in content
    assert 'action="/audit/answers/' in content and "csrfmiddlewaretoken" in content
    assert f'href="/audit/answers/{answer.id}/export.json"' in content


def test_document_text_stays_text(auditor: Client) -> None:
    answer = make_answer(question=f"What does {SCRIPT} do?")
    content = auditor.get(f"/audit/answers/{answer.id}/").content.decode()
    assert SCRIPT not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in content  # source card, question
    scripts = re.findall(r"<script[^>]*>", content)
    assert all(" src=" in tag or 'id="audit-data"' in tag for tag in scripts)  # no script from the data
    data = page_data(content)
    assert SCRIPT in data["sources"][1]["text"]  # escaped in the page, intact once parsed


def test_exact_attribution_is_shown_beside_the_fast_one(auditor: Client) -> None:
    answer = make_answer(exact=True)
    content = auditor.get(f"/audit/answers/{answer.id}/").content.decode()
    assert "75%" in content and "100%" in content and "over 17 tokens" in content
    assert "Run exact attribution again" in content
    data = page_data(content)
    assert data["exact"] is True
    paris = data["tokens"][14]["supports"]
    assert [(s["number"], s["fast"], s["exact"]) for s in paris] == [(2, 0.7, 0.7), (1, 0.5, 0.9)]


def test_segments_keep_every_character_and_put_markers_before_tokens() -> None:
    text = "Paris is big [2]."
    tokens: list[dict[str, Any]] = [
        {"index": 0, "start": 0, "end": 5, "top": 1},
        {"index": 1, "start": 5, "end": 16, "top": 2},  # overlaps the marker: cut in two
        {"index": 2, "start": 16, "end": 17, "top": None},
    ]
    segments = answer_segments(text, tokens, [{"marker_start": 12, "marker_end": 16}])
    assert "".join(s["text"] for s in segments) == text
    assert [(s["kind"], s.get("index", s.get("number"))) for s in segments] == [
        ("token", 0),
        ("token", 1),
        ("text", None),
        ("cite", 2),
        ("token", 2),
    ]
    assert [s.get("colour") for s in segments if s["kind"] == "token"] == ["src-0", "src-1", "none"]


# --- exact attribution on demand ----------------------------------------------------------------


def test_exact_request_failure_is_a_plain_message(auditor: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = make_answer()

    def unreachable(answer: Answer, **_: Any) -> ExactRun:
        raise services.ProvenanceError("The task queue (Redis) is not reachable; try again shortly.")

    monkeypatch.setattr(runs, "exact_request", unreachable)
    response = auditor.post(f"/audit/answers/{answer.id}/exact/")
    assert response.status_code == 302 and response["Location"] == f"/audit/answers/{answer.id}/"
    page = auditor.get(response["Location"])
    assert page.status_code == 200
    content = page.content.decode()
    assert "The task queue (Redis) is not reachable; try again shortly." in content
    assert 'role="alert"' in content and "Traceback" not in content
    assert auditor.get(f"/audit/answers/{answer.id}/exact/").status_code == 405


def test_exact_request_is_queued_and_reported(auditor: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = make_answer()
    asked: list[tuple[uuid.UUID, str]] = []

    def queued(answer: Answer, *, user: Any = None) -> ExactRun:
        asked.append((answer.id, user.get_username()))
        return ExactRun.objects.create(answer=answer, total=32)

    monkeypatch.setattr(runs, "exact_request", queued)
    page = auditor.post(f"/audit/answers/{answer.id}/exact/", follow=True)
    assert asked == [(answer.id, "audrey")]
    content = page.content.decode()
    assert "Exact attribution is queued (32 passes)" in content
    assert "exact attribution: <strong" in content and "queued</strong> 0/32" in content


class FakeTask:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def apply_async(self, *, args: tuple[Any, ...], queue: str) -> None:
        self.sent.append((*args, queue))


def test_a_running_exact_attribution_shows_its_progress_polls_and_can_be_cancelled(
    auditor: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.provenance import tasks

    answer = make_answer()
    task = FakeTask()
    monkeypatch.setattr(tasks, "attribute_exact_task", task)
    auditor.post(f"/audit/answers/{answer.id}/exact/")
    run = ExactRun.objects.get(answer=answer)
    assert task.sent == [(str(answer.id), run.id, "attribution")]  # its own queue, not the generation queue
    assert run.requested_by is not None and run.requested_by.get_username() == "audrey"
    ExactRun.objects.filter(id=run.id).update(state=ExactRun.RUNNING, done=12)

    content = auditor.get(f"/audit/answers/{answer.id}/").content.decode()
    assert "running</strong> 12/32" in content and ">Cancel</button>" in content
    assert f'hx-get="/audit/answers/{answer.id}/exact/status/" hx-trigger="every 2s"' in content
    assert "Run exact attribution" not in content  # one run at a time
    polled = auditor.get(f"/audit/answers/{answer.id}/exact/status/", headers={"HX-Request": "true"})
    assert polled.status_code == 200 and polled.content.decode().lstrip().startswith('<div id="exact-status"')

    page = auditor.post(f"/audit/answers/{answer.id}/exact/cancel/", follow=True).content.decode()
    run.refresh_from_db()
    assert run.cancel_requested and run.state == ExactRun.RUNNING  # the worker stops between two passes
    assert "stops after the pass it is running (12/32 passes done)" in page
    assert "cancelling after the current pass" in page and ">Cancel</button>" not in page

    ExactRun.objects.filter(id=run.id).update(state=ExactRun.CANCELLED)
    polled = auditor.get(f"/audit/answers/{answer.id}/exact/status/", headers={"HX-Request": "true"})
    done = polled.content.decode()
    assert "cancelled</strong> 12/32" in done and "hx-trigger" not in done  # polling stops
    assert "Run exact attribution" in done


def test_a_queued_exact_attribution_is_cancelled_at_once_and_never_claimed(auditor: Client) -> None:
    answer = make_answer()
    run = ExactRun.objects.create(answer=answer, total=32)
    auditor.post(f"/audit/answers/{answer.id}/exact/cancel/")
    run.refresh_from_db()
    assert run.state == ExactRun.CANCELLED and run.finished_at is not None
    assert runs.exact_run_execute(run_id=run.id, generator_of=lambda: pytest.fail("not loaded")) is None
    page = auditor.post(f"/audit/answers/{answer.id}/exact/cancel/", follow=True).content.decode()
    assert "No exact attribution of this answer is queued or running." in page


def test_no_worker_on_the_attribution_queue_is_said_before_anything_is_queued(
    auditor: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = make_answer()
    monkeypatch.setattr(workers, "consumers_ask", lambda **_: workers.Consumers(known=True, by_queue={"gpu": ("g",)}))
    page = auditor.post(f"/audit/answers/{answer.id}/exact/", follow=True).content.decode()
    assert "No worker consumes the &#x27;attribution&#x27; queue" in page
    assert not ExactRun.objects.filter(answer=answer).exists()


# --- export -----------------------------------------------------------------------------------


def test_the_export_is_the_provenance_record(auditor: Client) -> None:
    answer = make_answer(exact=True)
    response = auditor.get(f"/audit/answers/{answer.id}/export.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="answer-{answer.id}.json"'
    assert "Skłodowska".encode() in response.content  # not \u-escaped
    record = json.loads(response.content)
    assert record["answer_id"] == str(answer.id) and record["answer"] == answer.answer
    tokens = record["attribution"]["fast"]["tokens"]
    assert len(tokens) == 16 and tokens[0]["text"] == "Marie" and tokens[0]["sources"][0]["number"] == 1
    assert record["attribution"]["exact"]["summary"]["agreement"]["top1_agreement"] == 0.75
    assert record["sources"][1]["text"].endswith("Curie directed its laboratory.")


# --- the list -----------------------------------------------------------------------------------


def dated(answer: Answer, day: int) -> Answer:
    Answer.objects.filter(pk=answer.pk).update(created_at=datetime.datetime(2024, 3, day, 12, tzinfo=datetime.UTC))
    return answer


@pytest.fixture
def three_answers() -> dict[str, Answer]:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    radium_only = [{**demo_sources()[1], "number": 1}]
    radium_only[0]["text"] += " See curie/biography.txt for more."  # the name in the text, not the document
    zurich = [chunk(1, "archive/Zürich notes.txt", "a" * 32, ["Curie visited Zürich."])]
    return {
        "first": dated(make_answer(question="Born where?", user=alice), 1),
        "second": dated(make_answer(question="Which institute?", user=bob, sources=radium_only, exact=True), 10),
        "third": dated(make_answer(question="Travels?", user=alice, sources=zurich), 20),
    }


def test_the_list_shows_newest_first_with_its_columns(auditor: Client, three_answers: dict[str, Answer]) -> None:
    response = auditor.get("/audit/answers/")
    assert response.status_code == 200
    ids = [str(three_answers[name].id) for name in ("third", "second", "first")]
    assert listed(response) == ids
    content = response.content.decode()
    row = content[content.index("Which institute?") - 400 : content.index("</tr>", content.index("Which institute?"))]
    assert "bob" in row and "2024-03-10 12:00:00" in row and "<td>1</td>" in row and "<td>yes</td>" in row


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"document": "biography"}, ["first"]),  # not "second", whose text names the file
        ({"document": "RADIUM/Institute"}, ["second", "first"]),
        ({"document": "zürich NOTES"}, ["third"]),
        ({"document": INSTITUTE_ID}, ["second", "first"]),
        ({"document": "nowhere.pdf"}, []),
        ({"user": "alice"}, ["third", "first"]),
        ({"date_from": "2024-03-05", "date_to": "2024-03-10"}, ["second"]),
        ({"date_from": "2024-03-10"}, ["third", "second"]),
        ({"question": "institute"}, ["second"]),
        ({"user": "alice", "document": "biography"}, ["first"]),
    ],
)
def test_the_list_filters(
    auditor: Client, three_answers: dict[str, Answer], query: dict[str, str], expected: list[str]
) -> None:
    response = auditor.get("/audit/answers/", query)
    assert response.status_code == 200
    assert listed(response) == [str(three_answers[name].id) for name in expected]


def test_a_wrong_date_is_reported_and_ignored(auditor: Client, three_answers: dict[str, Answer]) -> None:
    response = auditor.get("/audit/answers/", {"date_from": "2024-13-45", "user": "bob"})
    assert response.status_code == 200
    assert "Enter a valid date." in response.content.decode()
    assert listed(response) == [str(three_answers["second"].id)]


def test_the_list_pages_by_fifty_and_keeps_its_filters(auditor: Client) -> None:
    sources = demo_sources()
    Answer.objects.bulk_create(Answer(question=f"q{i}", sources=sources) for i in range(51))
    first = auditor.get("/audit/answers/", {"document": "biography"})
    assert len(listed(first)) == 50
    assert 'href="?document=biography&amp;page=2"' in first.content.decode()
    assert len(listed(auditor.get("/audit/answers/", {"document": "biography", "page": "2"}))) == 1
    assert len(listed(auditor.get("/audit/answers/", {"page": "2"}))) == 1


def test_path_steps_name_entities_and_predicates_from_the_graph() -> None:
    from apps.answers.paths import NodeName
    from apps.provenance.pages import _path_steps

    seed, middle, other, unit = "a" * 32, "b" * 32, "c" * 32, "d" * 32
    path = {"nodes": [seed, middle, other, unit], "relationships": ["MENTIONS", "RELATED", "MENTIONS"]}
    names = {middle: NodeName("Entity", "Marie Curie"), other: NodeName("Entity", "Sorbonne")}
    steps = _path_steps(path, {seed: "[1] biography.txt"}, names, {(other, middle): "taught at"})
    assert [s["label"] for s in steps] == [
        "[1] biography.txt",
        "MENTIONS",
        "Marie Curie",
        "taught at",
        "Sorbonne",
        "MENTIONS",
        f"node {unit[:8]}",
    ]
    bare = _path_steps(path, {}, {}, {})
    assert bare[2]["label"] == f"entity {middle[:8]}" and bare[3]["label"] == "RELATED"


def test_sub_word_pieces_are_one_word_with_their_supports_merged() -> None:
    from apps.provenance.pages import page_words

    text = "Gwendolyn Pryce led it."

    def token(start: int, end: int, *supports: tuple[int, int, float]) -> dict[str, Any]:
        rows = [
            {"number": n, "sentence": s, "start": 0, "end": 5, "column": "", "fast": f, "exact": None}
            for n, s, f in supports
        ]
        return {"text": text[start:end], "start": start, "end": end, "supports": rows}

    tokens = [
        token(0, 2, (1, 0, 0.2)),  # "Gw"
        token(2, 9, (2, 1, 0.6), (1, 0, 0.5)),  # "endolyn"
        token(9, 15, (2, 1, 0.7)),  # " Pryce"
        token(15, 19),  # " led"
        token(19, 22),  # " it"
        token(22, 23),  # "."
    ]
    words = page_words(tokens, text)
    assert [w["text"] for w in words] == ["Gwendolyn", " Pryce", " led", " it", "."]
    assert [w["index"] for w in words] == [0, 1, 2, 3, 4]
    first = words[0]
    assert [(s["number"], s["fast"]) for s in first["supports"]] == [(2, 0.6), (1, 0.5)]
    assert first["top"] == 2 and first["pieces"] == 2 and (first["start"], first["end"]) == (0, 9)
    assert words[2]["top"] is None

"""Attribution of stored answers with the real generator: the record, the citations, exact mode and the command."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from apps.answers.models import Answer
from apps.models.interfaces import Generator
from apps.models.registry import generator as load_generator
from apps.provenance import faithfulness, runs
from apps.provenance.exact import ExactParams
from apps.provenance.models import AttributionRecord, ExactRun
from apps.provenance.services import answer_attribute_exact, answer_reattribute, provenance_record

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def generator() -> Generator:
    return load_generator()


def stored_answer(generator: Generator) -> tuple[Answer, faithfulness.Case]:
    item = faithfulness.hotpotqa_items(Path(settings.DEMO_DATA_DIR))[:1]
    case = faithfulness.copy_cases(item, paragraphs=3, count_tokens=lambda t: len(t.split()))[0]
    generated = f"{case.answer} [3]"  # a model marker the citations must not keep
    answer = Answer.objects.create(
        question=case.question,
        state=Answer.DONE,
        answer=generated,
        generated=generated,
        sources=case.sources,
        prompt_system=case.system,
        prompt_user=case.user,
    )
    return answer, case


def test_fast_attribution_is_stored_with_citations_that_match_the_answer(generator: Generator) -> None:
    answer, case = stored_answer(generator)
    assert case.target is not None
    cited = answer_reattribute(answer, generator)
    assert "[3]" not in answer.answer and answer.answer == cited.text
    assert answer.citations and answer.citations[0]["sources"] == [case.target[0] + 1]
    record = provenance_record(answer)
    tokens = record["attribution"]["fast"]["tokens"]
    assert tokens and all(answer.answer[t["start"] : t["end"]] == t["text"] for t in tokens)
    target_id = case.sources[case.target[0]]["id"]
    on_target = [t for t in tokens if t["sources"] and t["sources"][0]["id"] == target_id]
    assert len(on_target) >= 0.9 * len(tokens)
    start, end = case.sources[case.target[0]]["sentences"][case.target[1]]
    assert (on_target[0]["sources"][0]["start"], on_target[0]["sources"][0]["end"]) == (start, end)
    assert {s["sha256"] for s in record["sources"]} and record["retrieval"]["timings_ms"] == {}


def test_exact_attribution_runs_and_reports_its_agreement_with_fast_mode(generator: Generator) -> None:
    answer, _ = stored_answer(generator)
    answer_reattribute(answer, generator)
    record = answer_attribute_exact(answer, generator, ExactParams(ablations=12))
    assert record.mode == "exact" and record.forward_passes == 12
    agreement = record.summary["agreement"]
    assert agreement["tokens"] > 0 and 0.0 <= agreement["top1_agreement"] <= 1.0
    exported = provenance_record(answer)["attribution"]
    assert set(exported) == {"fast", "exact"}
    assert [t["start"] for t in exported["exact"]["tokens"]] == [t["start"] for t in exported["fast"]["tokens"]]


def test_attribute_command_runs_exact_mode_here_and_refuses_unknown_answers(
    generator: Generator, settings: Settings
) -> None:
    answer, _ = stored_answer(generator)
    answer_reattribute(answer, generator)
    settings.PROVENANCE_EXACT_ABLATIONS = 8
    out = io.StringIO()
    call_command("attribute", str(answer.id), "--exact", "--here", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["fast"]["forward_passes"] == 2 and result["exact"]["forward_passes"] == 8
    assert "agreement" in result["exact"]["summary"]
    assert AttributionRecord.objects.filter(answer=answer).count() == 2
    with pytest.raises(CommandError, match="no answer"):
        call_command("attribute", "not-an-id")


def test_an_exact_run_records_its_progress_and_stops_between_passes_when_cancelled(
    generator: Generator, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.PROVENANCE_EXACT_ABLATIONS = 8
    answer, _ = stored_answer(generator)
    answer_reattribute(answer, generator)
    seen: list[tuple[int, int]] = []
    recorded = runs.run_progress

    def progress(run_id: int, done: int, total: int) -> None:
        seen.append((done, total))
        if done == 3 and run_id == run.id:  # an auditor presses Cancel during the third pass
            ExactRun.objects.filter(id=run_id).update(cancel_requested=True)
        recorded(run_id, done, total)

    run = ExactRun.objects.create(answer=answer, total=8)
    monkeypatch.setattr(runs, "run_progress", progress)
    ended = runs.exact_run_execute(run_id=run.id, generator_of=lambda: generator)
    assert ended is not None and (ended.state, ended.done, ended.total) == ("cancelled", 3, 8)
    assert seen == [(1, 8), (2, 8), (3, 8)] and ended.finished_at is not None
    assert not AttributionRecord.objects.filter(answer=answer, mode="exact").exists()  # nothing stored
    assert runs.exact_run_execute(run_id=run.id, generator_of=lambda: generator) is None  # claimed once only

    again = ExactRun.objects.create(answer=answer, total=8)
    ended = runs.exact_run_execute(run_id=again.id, generator_of=lambda: generator)
    assert ended is not None and (ended.state, ended.done) == ("done", 8)
    assert AttributionRecord.objects.get(answer=answer, mode="exact").forward_passes == 8

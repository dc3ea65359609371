"""Token attribution of answers: fast mode right after generation, exact mode on demand, and the
whole provenance record of an answer (what the audit pages show and export)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from apps.answers.models import Answer
from apps.models.engines import exact_scorer
from apps.models.interfaces import Generator
from apps.provenance.citations import CitedAnswer, cite, token_offsets
from apps.provenance.exact import ExactAttributor, ExactParams, Progress, agreement
from apps.provenance.fast import FastAttributor, calibrated_params
from apps.provenance.layout import Layout, layout_build
from apps.provenance.models import AttributionRecord
from apps.provenance.storage import answer_tokens, attribution_pack, attribution_unpack
from apps.provenance.types import EXACT, FAST, Attribution, Attributor
from apps.provenance.units import source_units, unit_texts

logger = logging.getLogger(__name__)


def _layout(answer: Answer, generator: Generator, generated: str) -> Layout:
    return layout_build(
        tokenizer=generator.tokenizer,
        system=answer.prompt_system,
        user=answer.prompt_user,
        answer=generated,
        sources=answer.sources,
        units=source_units(answer.sources),
    )


def attributor(mode: str, generator: Generator) -> Attributor:
    """The configured method of a mode: fast (calibrated for ``generator`` when it can be) or exact."""
    if mode == FAST:
        return FastAttributor(calibrated_params(generator.name, settings.PROVENANCE_LEXICAL_WEIGHT))
    if mode == EXACT:
        return ExactAttributor(exact_params())
    raise ValueError(f"unknown attribution mode {mode!r}")


def exact_params() -> ExactParams:
    return ExactParams(ablations=settings.PROVENANCE_EXACT_ABLATIONS)


def _run(method: Attributor, answer: Answer, generator: Generator, layout: Layout, generated: str) -> Attribution:
    return method.attribute(
        generator=generator, layout=layout, answer=generated, unit_texts=unit_texts(answer.sources, layout.units)
    )


def _save(
    answer: Answer, attribution: Attribution, offsets: list[tuple[int, int] | None], **summary: Any
) -> AttributionRecord:
    record, _ = AttributionRecord.objects.update_or_create(
        answer=answer,
        mode=attribution.mode,
        defaults={
            "method": attribution.method,
            "model": attribution.model,
            "tokens": sum(span is not None for span in offsets),
            "forward_passes": attribution.forward_passes,
            "seconds": round(attribution.seconds, 4),
            "payload": attribution_pack(attribution, offset_map=offsets),
            "summary": summary,
        },
    )
    return record


def answer_attribute_fast(answer: Answer, generator: Generator, generated: str) -> CitedAnswer:
    """Fast attribution of a just-generated answer, stored; returns the answer with its citations."""
    layout = _layout(answer, generator, generated)
    attribution = _run(attributor(FAST, generator), answer, generator, layout, generated)
    cited = cite(generated, attribution)
    tokens = max(1, len(attribution.tokens))
    _save(answer, attribution, cited.token_offsets, ms_per_token=round(attribution.seconds * 1000 / tokens, 3))
    return cited


def answer_attribute_exact(
    answer: Answer, generator: Generator, params: ExactParams | None = None, *, progress: Progress | None = None
) -> AttributionRecord:
    """Exact (ablation) attribution of a finished answer, stored next to the fast one with their agreement.
    ``progress`` is told after every pass and may stop it (``AttributionCancelled``; nothing stored)."""
    generated = answer.generated or answer.answer
    layout = _layout(answer, generator, generated)
    method = ExactAttributor(params or exact_params(), progress=progress, scorer=exact_scorer())
    exact = _run(method, answer, generator, layout, generated)
    fast = _run(attributor(FAST, generator), answer, generator, layout, generated)
    insertions = [(int(c["at"]), int(c["width"])) for c in answer.citations]
    offsets = token_offsets(generated, layout.answer_tokens, insertions)
    tokens = max(1, len(exact.tokens))
    return _save(
        answer,
        exact,
        offsets,
        agreement=agreement(fast, exact),
        ms_per_token=round(exact.seconds * 1000 / tokens, 3),
        fast_ms_per_token=round(fast.seconds * 1000 / tokens, 3),
    )


def _record_dict(record: AttributionRecord, answer: Answer) -> dict[str, Any]:
    return {
        "mode": record.mode,
        "method": record.method,
        "model": record.model,
        "tokens": answer_tokens(attribution_unpack(record.payload), answer=answer.answer, sources=answer.sources),
        "forward_passes": record.forward_passes,
        "seconds": record.seconds,
        "summary": record.summary,
        "created_at": record.created_at.isoformat(),
    }


def answer_token_provenance(answer: Answer) -> list[dict[str, Any]]:
    """The fast-mode ``tokens`` of an answer ([] when it has none)."""
    record = AttributionRecord.objects.filter(answer=answer, mode=FAST).first()
    if record is None:
        return []
    return answer_tokens(attribution_unpack(record.payload), answer=answer.answer, sources=answer.sources)


def provenance_record(answer: Answer) -> dict[str, Any]:
    """Everything recorded about one answer: question, answer with citations, sources (exact text and
    hash of each version used), token attributions (fast, and exact when run), the retrieval trace."""
    records = {record.mode: record for record in AttributionRecord.objects.filter(answer=answer)}
    return {
        "answer_id": str(answer.id),
        "question": answer.question,
        "state": answer.state,
        "answer": answer.answer,
        "generated": answer.generated,
        "reason": answer.reason,
        "error": answer.error,
        "user": answer.user.get_username() if answer.user else None,
        "collections": answer.collections,
        "created_at": answer.created_at.isoformat(),
        "finished_at": answer.finished_at.isoformat() if answer.finished_at else None,
        "citations": answer.citations,
        "sources": answer.sources,
        "attribution": {
            mode: _record_dict(record, answer) for mode, record in records.items() if mode in (FAST, EXACT)
        },
        "retrieval": {
            "mode": answer.mode,
            "analysis": answer.analysis,
            "seeds": answer.seeds,
            "timings_ms": answer.timings_ms,
            "stats": answer.stats,
            "prompt_tokens": answer.prompt_tokens,
        },
        "generation": answer.generation,
        "models": answer.model_names,
    }


class ProvenanceError(Exception):
    """A request about provenance that cannot be carried out, in plain words."""


def record_summary(record: AttributionRecord) -> dict[str, Any]:
    """An attribution record without its tokens."""
    return {
        "mode": record.mode,
        "method": record.method,
        "model": record.model,
        "tokens": record.tokens,
        "forward_passes": record.forward_passes,
        "seconds": record.seconds,
        "summary": record.summary,
    }


def answer_reattribute(answer: Answer, generator: Generator) -> CitedAnswer:
    """Fast attribution of a finished answer again (e.g. after a new calibration): the record, the
    citations and the cited text are replaced together, so token offsets match the stored answer."""
    cited = answer_attribute_fast(answer, generator, answer.generated)
    Answer.objects.filter(id=answer.id).update(answer=cited.text, citations=cited.citations)
    answer.refresh_from_db()
    return cited

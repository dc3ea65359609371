"""``manage.py evaluate``'s work: ingest a dataset's corpus if needed, then score dense and graph retrieval."""

from __future__ import annotations

import logging
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from apps.answers.evaluation import (
    EvalQuestion,
    ModeReport,
    all_supporting_at,
    answer_bearing,
    corpus_name,
    eval_corpus,
    eval_questions,
    exact_match,
    f1_score,
    recall_at,
    supporting_texts,
)
from apps.answers.pipeline import RetrievalParams, RetrievalTools, retrieve
from apps.graph.driver import get_driver
from apps.ingest.models import Document
from apps.ingest.services import FAILED, default_extractor, uploads_ingest
from apps.models.interfaces import Generator

logger = logging.getLogger(__name__)


# For "not found" measurements: each dataset's questions asked against a collection that does not hold
# their answers (another dataset's corpus).
FOREIGN = {"hotpotqa": "musique", "musique": "2wiki", "2wiki": "hotpotqa"}


def eval_collection(dataset: str) -> str:
    return f"eval-{corpus_name(dataset)}"


def corpus_ensure(*, dataset: str, data_dir: Path) -> int:
    """Ingest the dataset's corpus into its own collection unless it is there; returns the documents ingested now."""
    return files_ensure(eval_corpus(dataset, data_dir), collection=eval_collection(dataset))


def files_ensure(files: Sequence[tuple[str, bytes]], *, collection: str) -> int:
    """Ingest ``files`` into ``collection`` unless it holds as many documents; returns the documents ingested now."""
    if Document.objects.filter(collection=collection).count() >= len(files):
        return 0
    logger.info("ingesting %d passages into %s", len(files), collection)
    outcomes = uploads_ingest(driver=get_driver(), uploads=files, collection=collection, extractor=default_extractor())
    failures = [outcome for outcome in outcomes if outcome.status == FAILED]
    if failures:
        raise RuntimeError(f"{len(failures)} passages failed to ingest into {collection}, e.g. {failures[0].path}")
    return len(files)


def mode_evaluate(
    *,
    questions: Sequence[EvalQuestion],
    collection: str,
    mode: str,
    ks: Sequence[int],
    tools: RetrievalTools,
    params: RetrievalParams,
    generate: Callable[[str, str], str] | None = None,
) -> ModeReport:
    """Recall@k of one retrieval mode over the questions (and EM/F1 when ``generate`` is given)."""
    recalls: dict[int, list[float]] = {k: [] for k in ks}
    ems, f1s, latencies, complete, first, pool, sizes = [], [], [], [], [], [], []
    stages: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        retrieval = retrieve(question=question.question, collections=[collection], tools=tools, params=params)
        latencies.append(sum(retrieval.timings_ms.values()))
        for stage, ms in retrieval.timings_ms.items():
            stages[stage].append(ms)
        documents = [candidate.document for candidate in retrieval.candidates]
        for k in ks:
            recalls[k].append(recall_at(documents, question.supporting, k))
        complete.append(all_supporting_at(documents, question.supporting, 5))
        pool.append(recall_at(documents, question.supporting, len(documents)))
        sizes.append(len(set(documents)))
        if any(answer_bearing(text, question.answers) for text in supporting_texts(question)):
            top = retrieval.candidates[0] if retrieval.candidates else None
            first.append(
                top is not None and top.document in question.supporting and answer_bearing(top.text, question.answers)
            )
        if generate is not None:
            prediction = generate(retrieval.prompt.system, retrieval.prompt.user)
            ems.append(exact_match(prediction, question.answers))
            f1s.append(f1_score(prediction, question.answers))
    return ModeReport(
        mode=mode,
        questions=len(questions),
        recall={k: statistics.fmean(values) for k, values in recalls.items()},
        exact_match=statistics.fmean(ems) if ems else None,
        f1=statistics.fmean(f1s) if f1s else None,
        p50_ms=statistics.median(latencies) if latencies else 0.0,
        all_supporting_at_5=statistics.fmean(complete) if complete else 0.0,
        answer_at_1=statistics.fmean(first) if first else None,
        pool_recall=statistics.fmean(pool) if pool else 0.0,
        pool_size=statistics.median(sizes) if sizes else 0.0,
        stage_p50_ms={stage: statistics.median(values) for stage, values in stages.items()},
    )


def generate_with(generator: Generator, max_new_tokens: int) -> Callable[[str, str], str]:
    def generate(system: str, user: str) -> str:
        return generator.generate(user, system=system, max_new_tokens=max_new_tokens)

    return generate


def dataset_evaluate(
    *,
    dataset: str,
    data_dir: Path,
    modes: Sequence[str],
    ks: Sequence[int],
    tools: RetrievalTools,
    params_for: Callable[[str], RetrievalParams],
    generator: Generator | None = None,
    max_new_tokens: int = 64,
    limit: int | None = None,
) -> list[ModeReport]:
    corpus_ensure(dataset=dataset, data_dir=data_dir)
    questions = eval_questions(dataset, data_dir)[:limit]
    generate = None if generator is None else generate_with(generator, max_new_tokens)
    return [
        mode_evaluate(
            questions=questions,
            collection=eval_collection(dataset),
            mode=mode,
            ks=ks,
            tools=tools,
            params=params_for(mode),
            generate=generate,
        )
        for mode in modes
    ]

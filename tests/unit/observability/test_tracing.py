"""Stage and request spans: names, nesting, attributes, errors and the stage histogram."""

from __future__ import annotations

import threading
import time

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from apps.observability.metrics import REGISTRY
from apps.observability.tracing import finished_spans, request_span, span_set, stage_span

pytestmark = pytest.mark.usefixtures("memory_tracing")


def by_name() -> dict[str, ReadableSpan]:
    return {span.name: span for span in finished_spans()}


def stage_sample(stage: str, suffix: str) -> float:
    return REGISTRY.get_sample_value(f"ragkg_stage_seconds_{suffix}", {"stage": stage}) or 0.0


def test_stage_span_is_named_after_the_stage_with_prefixed_attributes() -> None:
    with stage_span("retrieve", top_k=8, collection="default", rerank=True, min_score=0.25):
        pass
    span = by_name()["ragkg.retrieve"]
    assert dict(span.attributes or {}) == {
        "ragkg.stage": "retrieve",
        "ragkg.top_k": 8,
        "ragkg.collection": "default",
        "ragkg.rerank": True,
        "ragkg.min_score": 0.25,
    }
    assert span.status.status_code is StatusCode.UNSET
    assert span.resource.attributes["service.name"] == "ragkg"


def test_span_set_adds_prefixed_attributes_to_the_yielded_span() -> None:
    with stage_span("generate") as span:
        span_set(span, tokens=42, model="tiny")
        span.set_attribute("raw.key", "kept as is")
    attributes = by_name()["ragkg.generate"].attributes or {}
    assert attributes["ragkg.tokens"] == 42
    assert attributes["ragkg.model"] == "tiny"
    assert attributes["raw.key"] == "kept as is"


def test_stage_spans_are_children_of_the_request_span() -> None:
    with request_span("ragkg.ask", question_chars=31) as parent:
        with stage_span("embed"):
            pass
        with stage_span("retrieve"):
            pass
    spans = by_name()
    ask = spans["ragkg.ask"]
    assert (ask.attributes or {})["ragkg.question_chars"] == 31
    assert ask.parent is None
    assert "ragkg.stage" not in (ask.attributes or {})
    for name in ("ragkg.embed", "ragkg.retrieve"):
        child = spans[name]
        assert child.parent is not None and child.parent.span_id == parent.get_span_context().span_id
        assert child.context is not None and child.context.trace_id == parent.get_span_context().trace_id


def test_a_stage_inside_a_stage_nests() -> None:
    with stage_span("answer"), stage_span("rerank"):
        pass
    spans = by_name()
    outer, inner = spans["ragkg.answer"], spans["ragkg.rerank"]
    assert outer.context is not None and inner.parent is not None
    assert inner.parent.span_id == outer.context.span_id


def test_an_exception_is_recorded_with_error_status_and_reraised() -> None:
    count_before = stage_sample("generate", "count")
    with pytest.raises(RuntimeError, match="model crashed"), request_span("ragkg.ask"), stage_span("generate"):
        raise RuntimeError("model crashed")
    spans = by_name()
    stage = spans["ragkg.generate"]
    assert stage.status.status_code is StatusCode.ERROR
    assert stage.status.description == "RuntimeError: model crashed"
    events = [event for event in stage.events if event.name == "exception"]
    assert len(events) == 1
    assert (events[0].attributes or {})["exception.type"] == "RuntimeError"
    assert spans["ragkg.ask"].status.status_code is StatusCode.ERROR
    assert stage_sample("generate", "count") == count_before + 1


def test_each_stage_span_observes_its_elapsed_seconds() -> None:
    count_before, sum_before = stage_sample("parse-test", "count"), stage_sample("parse-test", "sum")
    with stage_span("parse-test"):
        time.sleep(0.02)
    with stage_span("parse-test"):
        pass
    assert stage_sample("parse-test", "count") == count_before + 2
    assert 0.02 <= stage_sample("parse-test", "sum") - sum_before < 5.0
    bucket = REGISTRY.get_sample_value("ragkg_stage_seconds_bucket", {"stage": "parse-test", "le": "0.001"})
    assert bucket is not None


def test_request_span_observes_no_stage_time() -> None:
    with request_span("ragkg.request-only"):
        pass
    assert REGISTRY.get_sample_value("ragkg_stage_seconds_count", {"stage": "ragkg.request-only"}) is None
    assert "ragkg.request-only" in by_name()


def test_first_use_from_many_threads_builds_one_provider() -> None:
    threads_count = 16
    barrier = threading.Barrier(threads_count)

    def work(index: int) -> None:
        barrier.wait()
        with stage_span("threaded", index=index):
            pass

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    indexes = [(span.attributes or {})["ragkg.index"] for span in finished_spans()]
    assert sorted(index for index in indexes if isinstance(index, int)) == list(range(threads_count))

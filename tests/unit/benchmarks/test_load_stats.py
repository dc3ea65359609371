"""The bookkeeping of the load benchmark: every request has one outcome, shed is told from
failure, the quantiles and the sustainable rate."""

from __future__ import annotations

import random

import pytest

from benchmarks.load_stats import (
    ANSWERED,
    FAILED,
    LOST,
    SHED,
    TIMEOUT,
    Result,
    accounting,
    arrivals,
    classify,
    percentile,
    pick,
    shed_not_timeouts,
    step_summary,
    sustainable_rate,
)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"status": 200}, (ANSWERED, "")),
        ({"status": 302}, (ANSWERED, "")),
        ({"status": 503, "retry_after": "10"}, (SHED, "")),
        ({"status": 503}, (FAILED, "HTTP 503 without Retry-After")),
        ({"status": 500}, (FAILED, "HTTP 500")),
        ({"status": 403}, (FAILED, "HTTP 403")),
        ({"status": 200, "ok": False, "error": "answer failed: no worker"}, (FAILED, "answer failed: no worker")),
        ({"status": None, "timed_out": True, "error": "timeout: ReadTimeout"}, (TIMEOUT, "timeout: ReadTimeout")),
        ({"status": None, "error": "ConnectionError: refused"}, (LOST, "ConnectionError: refused")),
        ({"status": None}, (LOST, "no reply")),
    ],
)
def test_each_reply_has_one_outcome(reply: dict[str, object], expected: tuple[str, str]) -> None:
    assert classify(**reply) == expected  # type: ignore[arg-type]


def test_arrivals_are_open_loop_at_the_rate_and_bounded() -> None:
    times = arrivals(4.0, 500.0, random.Random(1))
    assert 1800 < len(times) < 2200 and times == sorted(times) and times[0] >= 0 and times[-1] < 500
    assert len(arrivals(4.0, 500.0, random.Random(1), limit=10)) == 10
    assert arrivals(0.0, 10.0, random.Random(1)) == [] and arrivals(1.0, 0.0, random.Random(1)) == []


def test_kinds_are_drawn_by_weight_and_zero_weight_never() -> None:
    rng = random.Random(3)
    drawn = [pick({"page": 3.0, "upload": 1.0, "never": 0.0}, rng) for _ in range(4000)]
    assert "never" not in drawn and 2800 < drawn.count("page") < 3200


def test_percentiles_interpolate_in_milliseconds() -> None:
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile(values, 50) == 50.5 and percentile(values, 99) == 99.0 and percentile([], 95) is None


def results(kind: str, step: int, outcomes: list[str], seconds: float = 0.1) -> list[Result]:
    return [Result(kind=kind, step=step, scheduled_at=0.0, seconds=seconds, outcome=o) for o in outcomes]


def test_a_step_counts_by_kind_and_only_a_clean_fast_step_is_sustained() -> None:
    clean = results("page", 0, [ANSWERED] * 10) + results("ask_full", 0, [ANSWERED] * 2, seconds=20.0)
    step = step_summary(clean, rate=1.0, seconds=10.0, bounds_ms={"page": 500.0, "ask_full": 60000.0})
    assert step["sustained"] and step["overall"]["sent"] == 12 and step["kinds"]["page"]["throughput_per_s"] == 1.0
    assert step["kinds"]["ask_full"]["latency_ms"]["p95"] == 20000.0 and step["overall"]["error_rate"] == 0.0

    slow = step_summary(clean, rate=1.0, seconds=10.0, bounds_ms={"ask_full": 10000.0})
    assert not slow["sustained"] and slow["p95_over_bound"] == {"ask_full": 20000.0}

    shed = results("page", 1, [ANSWERED] * 8 + [SHED, SHED])
    busy = step_summary(shed, rate=2.0, seconds=10.0, bounds_ms={})
    assert not busy["sustained"] and busy["overall"]["shed"] == 2 and busy["overall"]["error_rate"] == 0.2
    assert busy["kinds"]["page"]["latency_ms"]["p50"] == 100.0  # of the answered ones only


def test_the_sustainable_rate_is_the_top_of_the_unbroken_run_of_sustained_steps() -> None:
    steps = [
        {"offered_per_s": 4.0, "sustained": True},  # a lucky step above a failed one does not count
        {"offered_per_s": 0.5, "sustained": True},
        {"offered_per_s": 1.0, "sustained": True},
        {"offered_per_s": 2.0, "sustained": False},
    ]
    assert sustainable_rate(steps) == 1.0
    assert sustainable_rate([{"offered_per_s": 0.5, "sustained": False}]) is None


def overall(shed: int, timeout: int, lost: int) -> dict[str, int]:
    return {SHED: shed, TIMEOUT: timeout, LOST: lost}


def test_above_the_sustainable_rate_overload_must_show_as_shedding() -> None:
    steps = [
        {"offered_per_s": 1.0, "overall": overall(0, 0, 0)},
        {"offered_per_s": 4.0, "overall": overall(5, 0, 0)},
        {"offered_per_s": 8.0, "overall": overall(20, 0, 0)},
    ]
    assert shed_not_timeouts(steps, 1.0) is True
    steps[2]["overall"] = overall(20, 3, 0)
    assert shed_not_timeouts(steps, 1.0) is False
    assert shed_not_timeouts(steps, 8.0) is None


def test_accounting_finds_a_request_without_an_outcome() -> None:
    done = results("page", 0, [ANSWERED, SHED, FAILED, TIMEOUT, LOST])
    assert accounting(5, done)["complete"] and accounting(5, done)[SHED] == 1
    assert not accounting(6, done)["complete"]  # one scheduled request never came back
    odd = [*done, Result(kind="page", step=0, scheduled_at=0.0, outcome="vanished")]
    assert accounting(6, odd)["unknown_outcome"] == 1 and not accounting(6, odd)["complete"]

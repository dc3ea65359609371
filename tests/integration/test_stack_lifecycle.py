"""`make up` starts the whole stack healthy; `make down` leaves no process behind.

Runs a second, private stack (own ports, own state directory) so it does not
disturb the services the rest of the suite uses.
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

from tests.support import free_port

pytestmark = pytest.mark.integration

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


def make(target: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    venv = str(Path(sys.executable).parent.parent)
    return subprocess.run(
        ["make", target, f"VENV={venv}"], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=400
    )


def test_make_up_then_down(tmp_path: Path, live_services: None) -> None:
    bolt, redis_port, web_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "RAGKG_STATE_DIR": str(tmp_path),
        "NEO4J_URI": f"bolt://127.0.0.1:{bolt}",
        "NEO4J_PASSWORD": PASSWORD,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "WEB_PORT": str(web_port),
        "WEB_WORKERS": "1",
        "RAGKG_MANAGED_SERVICES": "neo4j,redis,celery,web",
    }
    up = make("up", env)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"http://127.0.0.1:{web_port}/" in up.stdout
        pids = {
            name: int((tmp_path / "run" / f"{name}.pid").read_text().split()[0])
            for name in ("neo4j", "redis", "celery-ingest", "celery-gpu", "celery-maintenance", "web")
        }
        processes = [member for pgid in pids.values() for member in group_members(pgid)]
        assert len(processes) > len(pids)  # the worker pool and gunicorn's workers run in those groups

        # The workers answer Celery's ping once up, and warm their models just after: on a loaded machine a
        # check can miss its time limit for a moment, so /healthz is asked until every check is ok.
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

        broker = env["REDIS_URL"]
        client = Celery(broker=broker, backend=broker)
        reply = client.send_task("health.graph_ping", queue="gpu").get(timeout=30)
        assert reply["server"].startswith("Neo4j Kernel 5.26")

        # Data survives a restart of the embedded Neo4j.
        uri, auth = env["NEO4J_URI"], ("neo4j", PASSWORD)
        with GraphDatabase.driver(uri, auth=auth) as driver:
            driver.execute_query("CREATE (:Marker {id: 'survives-restart'})")
        subprocess.run([sys.executable, "scripts/services.py", "down", "neo4j"], cwd=BASE_DIR, env=env, check=True)
        assert not group_members(pids["neo4j"])
        subprocess.run([sys.executable, "scripts/services.py", "up", "neo4j"], cwd=BASE_DIR, env=env, check=True)
        with GraphDatabase.driver(uri, auth=auth) as driver:
            records, _, _ = driver.execute_query("MATCH (m:Marker {id: 'survives-restart'}) RETURN count(m) AS n")
        assert records[0]["n"] == 1
        pids["neo4j"] = int((tmp_path / "run" / "neo4j.pid").read_text().split()[0])
    finally:
        down = make("down", env)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not list((tmp_path / "run").glob("*.pid"))
    for pgid in pids.values():
        assert group_members(pgid) == []
    assert "neo4j driver closed" in (tmp_path / "log" / "celery-gpu.log").read_text()  # it ran graph_ping

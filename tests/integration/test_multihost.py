"""Many hosts on one PostgreSQL, one Neo4j and one Redis: two web hosts and a worker host, each a set of
processes with its own state folder (its own vector copy and local snapshots) and ports; only the
uploaded files and media are a shared folder, as a deployment mounts one. Neo4j runs with a user
database that is not called ``neo4j``, so every part must use ``NEO4J_DATABASE``.

What a deployment needs of it: a document uploaded through host B is answerable on host A within 10 s;
its deletion stops being served on A within 10 s; host A, restarted after changes it missed, catches
up (from its local snapshot plus the feed); a user's collections hold on every host."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from neo4j import GraphDatabase

from tests.conftest import SERVICES
from tests.postgres import postgres_server
from tests.support import BASE_DIR, USER_SCRIPT, free_port, manage

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = BASE_DIR / "var" / "test-multihost"
DATABASE = "ragkg-hosts"  # the embedded Neo4j is created with this user database and no other
BOUND = 10.0  # seconds: a change made through one host is served by every other within this

OBSERVATORY = b"Marigold Fenwick founded the Lanternwick Observatory in 1902. It stands on Corvane Hill."
TRAMWAY = b"Ellery Quaint opened the Brackenmoor tramway in 1911. The tramway ran to the harbour at Ostwick."
ASK_OBSERVATORY = "Who founded the Lanternwick Observatory?"
ASK_TRAMWAY = "Who opened the Brackenmoor tramway?"


@dataclass
class Host:
    name: str
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.env['WEB_PORT']}"

    def services(self, *args: str) -> None:
        done = subprocess.run(
            [*SERVICES, *args], cwd=BASE_DIR, env={**os.environ, **self.env}, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"{self.name}: services {' '.join(args)}\n{done.stdout}\n{done.stderr}"

    def manage(self, *args: str, **env: str) -> str:
        done = manage(*args, **{**self.env, **env})
        assert done.returncode == 0, f"{self.name}: manage.py {' '.join(args)}\n{done.stdout}\n{done.stderr}"
        return done.stdout


@dataclass
class Cluster:
    backing: Host
    worker: Host
    a: Host
    b: Host


def _host(name: str, shared: dict[str, str], managed: str, **extra: str) -> Host:
    return Host(name, {**shared, "RAGKG_STATE_DIR": str(ROOT / name), "RAGKG_MANAGED_SERVICES": managed, **extra})


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    shutil.rmtree(ROOT, ignore_errors=True)
    with postgres_server() as database_url:
        shared = {
            "DATABASE_URL": database_url,
            "NEO4J_URI": f"bolt://127.0.0.1:{free_port()}",
            "NEO4J_DATABASE": DATABASE,
            "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
            "CHAIN_RPC_URL": f"http://127.0.0.1:{free_port()}",  # no chain: nothing here anchors
            "RAGKG_UPLOAD_DIR": str(ROOT / "files" / "uploads"),
            "RAGKG_MEDIA_DIR": str(ROOT / "files" / "media"),
            "RAGKG_WORKER_QUEUES": "ingest",
            "WEB_WORKERS": "1",
            "HEALTH_CHECK_TIMEOUT": "1.0",
        }
        cluster = Cluster(
            backing=_host("backing", shared, "neo4j,redis"),
            worker=_host("worker", shared, "celery"),
            # host A saves a local snapshot after every change it applies, so its restart starts from one
            a=_host("a", shared, "web", WEB_PORT=str(free_port()), VECTORS_SNAPSHOT_MIN_VECTORS="1"),
            b=_host("b", shared, "web", WEB_PORT=str(free_port())),
        )
        started: list[Host] = []
        try:
            cluster.backing.services("up", "neo4j", "redis")
            started.append(cluster.backing)
            cluster.backing.manage("graph_schema", "-v", "0")
            for host, name in ((cluster.worker, "celery"), (cluster.a, "web"), (cluster.b, "web")):
                started.append(host)
                host.services("up", name)
            yield cluster
        finally:
            for host in reversed(started):
                subprocess.run([*SERVICES, "down"], cwd=BASE_DIR, env={**os.environ, **host.env}, timeout=120,
                               capture_output=True)  # fmt: skip


def api_key(host: Host, roles: str) -> str:
    name = f"hosts-{uuid.uuid4().hex[:8]}"
    host.manage("shell", "-c", USER_SCRIPT, API_USER=name, API_ROLES=roles)
    return host.manage("apikeys", "create", name, "--name", "hosts").strip().splitlines()[-1]


class Client:
    def __init__(self, host: Host, key: str) -> None:
        self.host = host
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"

    def call(self, method: str, path: str, expect: int, **kwargs: Any) -> Any:
        response = self.http.request(method, f"{self.host.url}/api/v1{path}", timeout=120, **kwargs)
        assert response.status_code == expect, (
            f"{self.host.name} {method} {path}: {response.status_code} {response.text[:500]}"
        )
        return response.json()

    def sources(self, question: str, collection: str) -> set[str]:
        answer = self.call(
            "POST", "/ask", 200, json={"question": question, "collections": [collection], "generate": False}
        )
        return {source["document_id"] for source in answer["sources"]}

    def upload(self, collection: str, name: str, text: bytes) -> str:
        job = self.call("POST", "/documents", 202, data={"collection": collection}, files=[("files", (name, text))])
        deadline = time.monotonic() + 240
        while job["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, job
            time.sleep(0.3)
            job = self.call("GET", f"/jobs/{job['id']}", 200)
        assert job["state"] == "done", job
        return str(job["results"][0]["document_id"])


def within(bound: float, what: str, predicate: Any) -> float:
    """Seconds until ``predicate()`` holds, polled every 0.2 s; fails past ``bound``."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < bound, f"{what}: not within {bound} s"
        time.sleep(0.2)
    return time.monotonic() - started


def copy_position(host: Host) -> tuple[int, int]:
    """The text space's change at the head of the shared feed, and the one host's web process stands at."""
    detail = requests.get(f"{host.url}/healthz", timeout=30).json()["checks"]["vectors"]["detail"]
    found = re.search(r"text: change (\d+) stored, this process at change (\d+)", detail)
    assert found, detail
    return int(found[1]), int(found[2])


def test_hosts_share_one_knowledge_base_and_each_follows_its_changes(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    curator_key, outsider_key = api_key(b, "curator"), api_key(a, "")
    on_a, on_b = Client(a, curator_key), Client(b, curator_key)
    collection = f"hosts-{uuid.uuid4().hex[:8]}"
    on_b.call("POST", "/collections", 201, json={"name": collection, "title": "Places"})
    assert on_a.sources(ASK_OBSERVATORY, collection) == set()  # host A's copy is loaded, without it

    observatory = on_b.upload(collection, "observatory.txt", OBSERVATORY)
    seen = within(
        BOUND, "the upload through B answerable on A", lambda: observatory in on_a.sources(ASK_OBSERVATORY, collection)
    )
    head, at = copy_position(a)
    assert at == head >= 1

    for host in (a, b):  # collections hold on every host
        outsider = Client(host, outsider_key)
        assert outsider.sources(ASK_OBSERVATORY, collection) == set()
        outsider.call("GET", f"/documents/{observatory}", 404)

    a.services("down", "web")
    tramway = on_b.upload(collection, "tramway.txt", TRAMWAY)  # while A is down
    snapshot = (ROOT / "a" / "vectors" / "text" / "manifest.json").read_text()
    snapshot_seq = int(re.search(r'"seq": (\d+)', snapshot)[1])  # type: ignore[index]
    a.services("up", "web")
    assert tramway in on_a.sources(ASK_TRAMWAY, collection)  # caught up at once after its start
    head, at = copy_position(a)
    assert at == head > snapshot_seq >= 1  # from its local snapshot, then the changes it missed

    on_b.call("DELETE", f"/documents/{observatory}", 200)
    gone = within(
        BOUND,
        "the deletion through B served on A",
        lambda: observatory not in on_a.sources(ASK_OBSERVATORY, collection),
    )
    head, at = copy_position(a)
    assert at == head

    check = json.loads(a.manage("vectors", "check", "--json"))  # graph, store, and host A's snapshot + feed
    assert check["ok"] and check["graph"] == check["stored"] == check["host"] >= 1, check

    auth = ("neo4j", os.environ["NEO4J_PASSWORD"])
    with GraphDatabase.driver(cluster.backing.env["NEO4J_URI"], auth=auth) as driver:
        databases, _, _ = driver.execute_query("SHOW DATABASES YIELD name, home", database_="system")
        assert {row["name"] for row in databases} == {DATABASE, "system"}
        documents, _, _ = driver.execute_query("MATCH (d:Document) RETURN d.id AS id", database_=DATABASE)
        assert [row["id"] for row in documents] == [tramway]
    logger.info("multi-host: answerable on A %.1f s after the upload through B finished; deletion %.1f s", seen, gone)

"""Small helpers shared by tests."""

import io
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, predicate: Callable[[], Any], timeout: float, interval: float = 0.3) -> Any:
    """``predicate()``'s first truthy value, asked every ``interval`` seconds; fails the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(interval)
    return value


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` in a subprocess with the test environment plus ``env`` (at most 300 s)."""
    return manage_within(300, *args, **env)


def manage_within(timeout: float, /, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``manage`` with its own time limit (seconds)."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


USER_SCRIPT = """
import os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
user, _ = get_user_model().objects.get_or_create(username=os.environ["API_USER"])
user.groups.set([Group.objects.get_or_create(name=r)[0] for r in os.environ["API_ROLES"].split(",") if r])
"""


@dataclass(frozen=True)
class ApiUser:
    name: str
    key: str


def api_user(roles: str) -> ApiUser:
    """A new user with ``roles`` (comma-separated) and a key for them, made as an operator would
    (``manage.py apikeys``), in the database of the running test stack."""
    name = f"api-{uuid.uuid4().hex[:8]}"
    made = manage("shell", "-c", USER_SCRIPT, API_USER=name, API_ROLES=roles)
    assert made.returncode == 0, made.stdout + made.stderr
    created = manage("apikeys", "create", name, "--name", "tests")
    assert created.returncode == 0, created.stdout + created.stderr
    return ApiUser(name, created.stdout.strip().splitlines()[-1])


def queue_purge(name: str) -> None:
    """Empty a Celery queue of the test broker (its plain and prioritised Redis lists). Tests that point
    generation at a queue no worker consumes call it, so its messages never pile up to the load-shedding
    limit (RAGKG_MAX_GPU_QUEUE) for the tests after them."""
    import redis
    from django.conf import settings

    from apps.core.admission import PRIORITY_SEPARATOR, PRIORITY_STEPS

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        client.delete(name, *(f"{name}{PRIORITY_SEPARATOR}{step}" for step in PRIORITY_STEPS))
    finally:
        client.close()


def renames_append(count: int) -> None:
    """Append ``count`` entity renames to the change log in one transaction (subjects ``e<n>`` continue
    from the entries already there), for tests of what follows the log: anchors, backups."""
    from django.db import transaction

    from apps.ledger.content import entity_content
    from apps.ledger.models import ChangeEntry
    from apps.ledger.services import Change, entries_append

    start = ChangeEntry.objects.count()
    changes = [
        Change(
            "entity.renamed",
            "Entity",
            f"e{start + i}",
            entity_content(entity_id=f"e{start + i}", name="old", type_="ORG"),
            entity_content(entity_id=f"e{start + i}", name=f"new {i}", type_="ORG"),
        )
        for i in range(count)
    ]
    with transaction.atomic():
        entries_append(actor="curator:ana", changes=changes)


def anvil_rpc(method: str, params: list[Any]) -> Any:
    """One plain JSON-RPC call to the test chain (settings.CHAIN_RPC_URL), for anvil's own methods:
    ``evm_mine``, ``anvil_mine`` (``[blocks]``), ``evm_snapshot`` and ``evm_revert`` (``[snapshot id]``).
    Returns the result; an error answer raises RuntimeError."""
    import json
    import urllib.request

    from django.conf import settings

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(settings.CHAIN_RPC_URL, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer.get("result")


def text_pdf(pages: list[str]) -> bytes:
    """A small PDF with one line of Helvetica text per page (written by hand: no PDF library writes text)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        stream = f"BT /F1 14 Tf 40 700 Td ({text}) Tj ET".encode()
        content = len(objects) + 1
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream.decode()}\nendstream")
        page = len(objects) + 1
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R "
            "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
        )
        kids.append(f"{page} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode())
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()

"""A throwaway PostgreSQL server from Debian's packages, for the tests that need one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support import free_port


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        pytest.fail("PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)")
    return found[-1].parent


def _as_postgres(*command: str) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *command], check=True, capture_output=True, text=True, timeout=120)


@contextmanager
def postgres_server(*, max_connections: int = 100) -> Iterator[str]:
    """Start a fresh server on a free port (trust auth, fsync off) with a ``ragkg`` database; yield its
    URL; stop it and remove its files afterwards."""
    bin_dir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="ragkg-pg-"))
    root.chmod(0o755)
    data = root / "data"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(data, "postgres")
    port = free_port()
    _as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-U", "ragkg", "--auth=trust", "-E", "UTF8")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections={max_connections}"
    _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "pg.log"), "-w", "start")
    try:
        _as_postgres(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "ragkg", "ragkg")
        yield f"postgres://ragkg@127.0.0.1:{port}/ragkg"
    finally:
        _as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)

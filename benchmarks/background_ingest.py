"""An ingestion running beside a benchmark, the way the ingest worker runs beside the web server.

    python -m benchmarks.background_ingest --collection NAME [--skip N] [--passages N] [--out FILE]

Ingests 2WikiMultihopQA passages from ``../shared/data`` (``--skip`` the first N, then ``--passages``
of them) into ``NAME`` with the real pipeline (parse, spaCy NER helpers, the text encoder, the
Neo4j write, FAISS), in this process and its helpers, and writes what it did as JSON to ``--out``.
Callers start it niced like the ingest worker (``RAGKG_INGEST_NICE``) with ``background_start``,
and stop it with ``background_stop`` (SIGTERM: the batch in flight is abandoned, nothing half-written
is served).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent


def background_start(*, collection: str, skip: int, passages: int, out: Path, nice: int) -> subprocess.Popen[bytes]:
    """Start an ingestion of ``passages`` 2Wiki passages (after the first ``skip``) at CPU priority ``nice``."""
    command = [sys.executable, "-m", "benchmarks.background_ingest", "--collection", collection]
    command += ["--skip", str(skip), "--passages", str(passages), "--out", str(out)]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    return subprocess.Popen(command, cwd=BASE_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def background_wait_busy(
    out: Path, process: subprocess.Popen[bytes], *, files: int = 100, timeout: float = 300.0
) -> None:
    """Wait until the ingestion has taken in ``files`` passages (its models are loaded and it is working)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the background ingestion ended early (exit {process.returncode})")
        if out.is_file() and json.loads(out.read_text()).get("files_done", 0) >= files:
            return
        time.sleep(0.5)
    raise RuntimeError("the background ingestion did not start working in time")


def background_stop(process: subprocess.Popen[bytes], out: Path) -> dict[str, object]:
    """Stop the ingestion (if still running) and return its report."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    report: dict[str, object] = json.loads(out.read_text()) if out.is_file() else {}
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    sys.path.insert(0, str(BASE_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")
    import django

    django.setup()
    from django.conf import settings

    from apps.graph.driver import get_driver
    from apps.ingest import corpora
    from apps.ingest.services import default_extractor, extraction_helpers_stop, uploads_ingest

    passages = list(corpora.twowiki_passages(Path(settings.DEMO_DATA_DIR)))[args.skip : args.skip + args.passages]
    progress = {"collection": args.collection, "passages": len(passages), "files_done": 0, "seconds": 0.0}
    started = time.perf_counter()

    def record(files_done: int) -> None:
        progress.update(files_done=files_done, seconds=round(time.perf_counter() - started, 2))
        args.out.write_text(json.dumps(progress))

    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    record(0)
    try:
        uploads_ingest(
            driver=get_driver(),
            uploads=passages,
            collection=args.collection,
            extractor=default_extractor(),
            on_batch=record,
        )
        progress["finished"] = True
    except KeyboardInterrupt:
        progress["finished"] = False
    finally:
        extraction_helpers_stop()
        progress["passages_per_second"] = round(progress["files_done"] / max(1e-9, time.perf_counter() - started), 1)
        record(int(progress["files_done"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

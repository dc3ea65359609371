"""Entity extraction spread over helper processes, so every CPU core runs NER.

Celery's prefork children are daemonic and may not start ``multiprocessing``
children, so the helpers are plain subprocesses (``python -m
apps.ingest.extraction_worker``) that read requests from stdin and answer on
stdout. ``ExtractorPool.submit`` sends one share of the texts to each helper and
returns at once; ``PendingExtraction.result`` collects the answers in order. The
ingestion pipeline writes the previous batch to Neo4j in between, so extraction
and graph writes overlap.

A helper that dies (killed, out of memory) makes ``result`` raise
``ExtractionFailed``; the pool starts fresh helpers on the next ``submit``.
Helpers exit when their stdin closes, which also happens when this process dies.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Protocol

from apps.ingest.extraction import DEFAULT_MODEL, EntityExtractor
from apps.ingest.types import Extraction

logger = logging.getLogger(__name__)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
_HEADER = struct.Struct("!Q")
# A request waits this long for the previous one to be collected, then fails instead of hanging.
BUSY_WAIT_SECONDS = 300.0


class ExtractionFailed(RuntimeError):
    """A helper process died or answered nonsense; the batch's extraction is lost."""


class PendingExtraction(Protocol):
    def result(self) -> list[Extraction]: ...


class _Done:
    def __init__(self, extractions: list[Extraction]) -> None:
        self._extractions = extractions

    def result(self) -> list[Extraction]:
        return self._extractions


def extraction_submit(extractor: EntityExtractor, texts: Sequence[str]) -> PendingExtraction:
    """Start extracting ``texts``: in the background with a pool, else right now."""
    if isinstance(extractor, ExtractorPool):
        return extractor.submit(texts)
    return _Done(extractor.extract(texts))


def send_message(stream: IO[bytes], payload: object) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def receive_message(stream: IO[bytes]) -> object:
    """The next message, or raise EOFError when the other side has gone."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("stream closed")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("stream closed mid-message")
    return pickle.loads(data)  # our own helper process, on a private pipe


class _Helper:
    def __init__(self, model: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "apps.ingest.extraction_worker", "--model", model],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=BASE_DIR,
            env={**os.environ, "PYTHONPATH": str(BASE_DIR)},
        )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, texts: Sequence[str]) -> None:
        assert self.process.stdin is not None
        try:
            send_message(self.process.stdin, list(texts))
        except (BrokenPipeError, OSError) as exc:
            raise ExtractionFailed(f"entity extraction helper stopped ({exc})") from exc

    def receive(self) -> list[Extraction]:
        assert self.process.stdout is not None
        try:
            answer = receive_message(self.process.stdout)
        except EOFError as exc:
            code = self.process.wait(timeout=5)
            raise ExtractionFailed(f"entity extraction helper exited with status {code}") from exc
        if isinstance(answer, BaseException):
            raise ExtractionFailed(f"entity extraction failed in a helper: {answer}") from answer
        if not isinstance(answer, list):
            raise ExtractionFailed("entity extraction helper answered with an unexpected message")
        return answer

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class _Pending:
    def __init__(self, pool: ExtractorPool, shares: list[tuple[_Helper, int]]) -> None:
        self._pool = pool
        self._shares = shares
        self._result: list[Extraction] | None = None
        self._released = False

    def result(self) -> list[Extraction]:
        if self._result is None:
            if self._released:  # an earlier call was interrupted; the helpers' answers are gone
                raise ExtractionFailed("the extraction was interrupted")
            extractions: list[Extraction] = []
            try:
                for helper, expected in self._shares:
                    answer = helper.receive()
                    if len(answer) != expected:
                        raise ExtractionFailed(f"a helper returned {len(answer)} extractions for {expected} texts")
                    extractions.extend(answer)
            except BaseException:  # a failure or an interruption: the helpers' streams are out of step
                self._pool.close()
                raise
            finally:
                self._released = True
                self._pool.release()
            self._result = extractions
        return self._result


def split_evenly(texts: Sequence[str], parts: int) -> list[list[str]]:
    """Consecutive slices with about the same number of characters each (no empty slice)."""
    total = sum(len(text) for text in texts) or 1
    slices: list[list[str]] = [[]]
    done = 0
    for text in texts:
        target = total * len(slices) / parts
        if slices[-1] and done >= target and len(slices) < parts:
            slices.append([])
        slices[-1].append(text)
        done += len(text)
    return [part for part in slices if part]


class ExtractorPool:
    """``EntityExtractor`` running ``SpacyExtractor`` in ``processes`` helper processes.

    One request at a time: ``submit`` waits until the previous request's result was
    collected (at most ``BUSY_WAIT_SECONDS``, then ``ExtractionFailed``). Helpers start on
    first use (each loads the spaCy model, about a second) and are reused until ``close``.
    """

    def __init__(self, *, processes: int, model: str = DEFAULT_MODEL) -> None:
        if processes < 1:
            raise ValueError("processes must be >= 1")
        self.name = f"spacy:{model}"
        self.model = model
        self.processes = processes
        self._helpers: list[_Helper] = []
        self._busy = threading.Lock()

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return self.submit(texts).result()

    def submit(self, texts: Sequence[str]) -> PendingExtraction:
        if not texts:
            return _Done([])
        if not self._busy.acquire(timeout=BUSY_WAIT_SECONDS):
            raise ExtractionFailed(
                f"entity extraction is still taken by an earlier request after {BUSY_WAIT_SECONDS} s "
                "(its result was never collected)"
            )
        try:
            helpers = self._ready_helpers()
            shares = split_evenly(texts, len(helpers))
            for helper, share in zip(helpers, shares, strict=False):
                helper.send(share)
        except BaseException:
            self.close()
            self._busy.release()
            raise
        return _Pending(self, [(helper, len(share)) for helper, share in zip(helpers, shares, strict=False)])

    def release(self) -> None:
        self._busy.release()

    def close(self) -> None:
        """Stop the helpers (they restart on the next ``submit``)."""
        helpers, self._helpers = self._helpers, []
        for helper in helpers:
            helper.stop()

    def _ready_helpers(self) -> list[_Helper]:
        if len(self._helpers) != self.processes or not all(helper.alive for helper in self._helpers):
            self.close()
            self._helpers = [_Helper(self.model) for _ in range(self.processes)]
            logger.info("started %d entity extraction helper processes", self.processes)
        return self._helpers

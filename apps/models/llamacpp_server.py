"""A llama.cpp server (llama.cpp's own C++ HTTP server, through the ``xllamacpp`` wheel) on the GGUF of
an offline generator: an OpenAI-compatible answer engine that installs from PyPI and needs no compiler.

``manage.py engine_serve`` runs one; ``scripts/services.py`` starts it as the ``engine`` service when
``RAGKG_ENGINE=llamacpp``, and the generation workers then send it their prompts
(``RAGKG_GENERATOR_URL`` points at it). It serves the very file the in-process generator is converted
from, so both read the same tokens and answer alike (docs/models.md compares them).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerOptions:
    """How the server runs: ``parallel`` answers at once (llama.cpp's slots, sharing the threads),
    ``context`` tokens per slot, ``threads`` for both prompt reading and decoding (0: one per core)."""

    host: str = "127.0.0.1"
    port: int = 8081
    threads: int = 0
    parallel: int = 1
    context: int = 4096
    api_key: str = ""


def server_params(gguf: Path, alias: str, options: ServerOptions) -> Any:
    """xllamacpp's ``CommonParams`` for serving ``gguf`` under the model name ``alias``. Its worker
    threads sleep when idle instead of spinning (``poll`` 0): a spinning pool starves the other
    processes of a small machine (and is starved by them)."""
    import xllamacpp

    threads = options.threads or max(1, os.cpu_count() or 1)
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = [alias] if isinstance(params.model_alias, (list, set)) else alias
    params.hostnames = [options.host]
    params.port = options.port
    params.n_parallel = options.parallel
    params.n_ctx = options.context * options.parallel
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cpuparams.poll = 0
    params.cpuparams_batch.poll = 0
    params.warmup = True
    if options.api_key:
        params.api_keys = [options.api_key]
    return params


def serve(gguf: Path, alias: str, options: ServerOptions) -> Any:
    """Start serving (returns once the server listens); the server stops with the process."""
    import xllamacpp

    server = xllamacpp.Server(server_params(gguf, alias, options))
    logger.info(
        "llama.cpp server for %s (%s) listening on http://%s:%d/v1", alias, gguf.name, options.host, options.port
    )
    return server

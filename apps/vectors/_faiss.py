"""The single import of faiss (``faiss-cpu`` here, ``faiss-gpu`` on a GPU machine: same module, same API).

faiss's bundled type hints cover only part of its API (no HNSW search parameters, no keyword
construction of parameter objects), so the module is used untyped.

OpenMP threads that wait for each other sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``,
unless the environment says otherwise; read once, when faiss's OpenMP runtime loads): on a machine
whose cores are shared with web workers, Celery and Neo4j, spinning made a batch of 64 queries
take 20 ms instead of 1 ms (docs/vectors.md).
"""

import os
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import faiss as _faiss  # after the OpenMP setting above

faiss: Any = _faiss

"""The GPU path: faiss GPU resources, one per thread (GPU indexes are not thread-safe).

With ``faiss-gpu`` and a visible GPU, flat and IVF-PQ indexes are searched through a GPU copy
of the CPU index (the CPU index stays the one that is written and saved). HNSW has no faiss GPU
implementation and stays on the CPU. Without a GPU this module is never used past
:func:`gpu_available`.
"""

from __future__ import annotations

import logging
import threading
from functools import cache
from typing import Any

import numpy as np

from apps.vectors._faiss import faiss
from apps.vectors.types import Ids

logger = logging.getLogger(__name__)

_local = threading.local()


@cache
def gpu_available() -> bool:
    """Whether this faiss build has GPU support and sees at least one GPU."""
    if not hasattr(faiss, "StandardGpuResources"):
        return False
    count = int(faiss.get_num_gpus())
    logger.info("faiss sees %d GPU(s)", count)
    return count > 0


def thread_resources() -> Any:
    """This thread's ``StandardGpuResources``, created on first use."""
    resources = getattr(_local, "resources", None)
    if resources is None:
        resources = faiss.StandardGpuResources()
        _local.resources = resources
    return resources


def gpu_copy(index: Any) -> tuple[Any, Ids | None]:
    """A GPU copy of the index, and the map from its positions to vector ids (None: it returns ids itself).

    Of an IndexIDMap2 only the inner index goes to the GPU and ids are translated by the caller,
    which works for every index type the GPU cloner accepts.
    """
    options = faiss.GpuClonerOptions()
    options.useFloat16 = True  # IVF-PQ lookup tables in half precision (needed for many sub-quantizer counts)
    if not isinstance(index, faiss.IndexIDMap2):
        return faiss.index_cpu_to_gpu(thread_resources(), 0, index, options), None
    copy = faiss.index_cpu_to_gpu(thread_resources(), 0, index.index, options)
    return copy, faiss.vector_to_array(index.id_map).astype(np.int64)

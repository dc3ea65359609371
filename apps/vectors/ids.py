"""Vector ids: a stable positive int64 for each graph node id."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

import numpy as np

from apps.vectors.types import Ids

_HEX = re.compile(r"[0-9a-f]{16,}")


def vector_id(node_id: str) -> int:
    """The first 63 bits of the node's content-hash id (other ids are hashed with SHA-256 first).

    The same node id always gives the same vector id, in every process and release.
    """
    digits = node_id if _HEX.fullmatch(node_id) else hashlib.sha256(node_id.encode("utf-8")).hexdigest()
    return int(digits[:16], 16) >> 1


def vector_ids(node_ids: Iterable[str]) -> Ids:
    return np.fromiter((vector_id(node_id) for node_id in node_ids), dtype=np.int64)

"""The canonical JSON form of a change-log entry: the bytes that are hashed into the Merkle tree.

The specification (docs/ledger.md, "Canonical form"), so that anyone can rebuild a leaf:

* a JSON object with exactly the keys ``v``, ``seq``, ``time``, ``actor``, ``action``,
  ``subject``, ``before`` and ``after`` (``subject`` has ``kind`` and ``id``);
* keys sorted by their UTF-16 code units at every level (for these ASCII keys: byte order),
  no whitespace, strings as JSON writes them with non-ASCII characters kept as UTF-8 (not
  escaped), integers in decimal; floats are not allowed anywhere;
* encoded as UTF-8.

This is RFC 8785 (JSON Canonicalization Scheme) restricted to values without floats, where
JCS and Python's ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

VERSION = 1
ACTIONS = frozenset(
    {
        "document.ingested",
        "document.updated",
        "document.deleted",
        "entity.created",
        "entity.merged",
        "entity.unmerged",
        "entity.renamed",
        "entity.deleted",
        "relation.added",
        "relation.approved",
        "relation.rejected",
        "relation.removed",
        "synonym.confirmed",
        "synonym.rejected",
        "curation.edited",
    }
)


class CanonicalError(ValueError):
    """A value that has no canonical form here (a float, a non-string key, an unknown action)."""


@dataclass(frozen=True)
class Entry:
    seq: int
    time: str  # RFC 3339, UTC, microseconds: 2026-11-29T18:01:15.123456Z
    actor: str
    action: str
    subject_kind: str
    subject_id: str
    before: str | None  # SHA-256 hex of the subject's content before the change (None: it did not exist)
    after: str | None  # ... and after it (None: it no longer exists)

    def as_json(self) -> dict[str, Any]:
        return {
            "v": VERSION,
            "seq": self.seq,
            "time": self.time,
            "actor": self.actor,
            "action": self.action,
            "subject": {"kind": self.subject_kind, "id": self.subject_id},
            "before": self.before,
            "after": self.after,
        }


def _check(value: Any, where: str) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return
    if isinstance(value, float):
        raise CanonicalError(f"{where}: floats have no canonical form here")
    if isinstance(value, list):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"{where}: keys must be strings")
            _check(item, f"{where}.{key}")
        return
    raise CanonicalError(f"{where}: {type(value).__name__} is not a JSON value")


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON value (no floats)."""
    _check(value, "$")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_bytes(entry: Entry) -> bytes:
    """The leaf data of one change-log entry."""
    if entry.action not in ACTIONS:
        raise CanonicalError(f"unknown action {entry.action!r}")
    if entry.seq < 0:
        raise CanonicalError("sequence numbers start at 0")
    return canonical_bytes(entry.as_json())

"""The sidecar: which graph node (id, label, collection) each vector id stands for.

Kept as parallel numpy arrays sorted by vector id, so a million entries cost tens of
megabytes, lookups are binary searches and saving is one ``.npz`` file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from apps.vectors.types import LABELS, Ids, VectorItem

Arrays = dict[str, npt.NDArray[np.generic]]


class Sidecar:
    def __init__(
        self,
        ids: Ids | None = None,
        nodes: npt.NDArray[np.bytes_] | None = None,
        labels: npt.NDArray[np.uint8] | None = None,
        collections: npt.NDArray[np.int32] | None = None,
        names: Sequence[str] = (),
    ) -> None:
        self.ids: Ids = np.empty(0, np.int64) if ids is None else ids
        self.nodes: npt.NDArray[np.bytes_] = np.empty(0, "S1") if nodes is None else nodes
        self.labels: npt.NDArray[np.uint8] = np.empty(0, np.uint8) if labels is None else labels
        self.collections: npt.NDArray[np.int32] = np.empty(0, np.int32) if collections is None else collections
        self.names: list[str] = list(names)
        self._codes = {name: code for code, name in enumerate(self.names)}

    def __len__(self) -> int:
        return int(self.ids.size)

    def _code(self, name: str) -> int:
        if name not in self._codes:
            self._codes[name] = len(self.names)
            self.names.append(name)
        return self._codes[name]

    def positions(self, ids: Ids) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """Where each id is (or would be) in the sorted arrays, and whether it is there."""
        pos = np.searchsorted(self.ids, ids)
        found = pos < self.ids.size
        found[found] = self.ids[pos[found]] == ids[found]
        return pos, found

    def contains(self, ids: Ids) -> npt.NDArray[np.bool_]:
        return self.positions(ids)[1]

    def node_ids(self, ids: Ids) -> list[str | None]:
        pos, found = self.positions(ids)
        return [self.nodes[p].decode("utf-8") if ok else None for p, ok in zip(pos, found, strict=True)]

    def lookup(self, ids: Ids) -> list[VectorItem | None]:
        pos, found = self.positions(ids)
        return [self._item(int(p)) if ok else None for p, ok in zip(pos, found, strict=True)]

    def _item(self, pos: int) -> VectorItem:
        return VectorItem(self.nodes[pos].decode("utf-8"), LABELS[self.labels[pos]], self.names[self.collections[pos]])

    def add(self, ids: Ids, items: Sequence[VectorItem]) -> None:
        """Add entries for ids that are not present yet (the caller removes replaced ones first)."""
        if not len(items):
            return
        unknown = {item.label for item in items} - set(LABELS)
        if unknown:
            raise ValueError(f"unknown node labels: {', '.join(sorted(unknown))} (use {', '.join(LABELS)})")
        nodes = np.array([item.node_id.encode("utf-8") for item in items], dtype=np.bytes_)
        labels = np.array([LABELS.index(item.label) for item in items], dtype=np.uint8)
        collections = np.array([self._code(item.collection) for item in items], dtype=np.int32)
        self._merge(ids, nodes, labels, collections)

    def _merge(
        self, ids: Ids, nodes: npt.NDArray[np.bytes_], labels: npt.NDArray[np.uint8], collections: npt.NDArray[np.int32]
    ) -> None:
        all_ids = np.concatenate([self.ids, ids])
        order = np.argsort(all_ids, kind="stable")
        self.ids = all_ids[order]
        self.nodes = np.concatenate([self.nodes, nodes])[order]
        self.labels = np.concatenate([self.labels, labels])[order]
        self.collections = np.concatenate([self.collections, collections])[order]

    def remove(self, ids: Ids) -> Ids:
        """Drop the entries of these ids; return the ids that were present."""
        keep = ~np.isin(self.ids, ids)
        removed = self.ids[~keep]
        self.ids, self.nodes = self.ids[keep], self.nodes[keep]
        self.labels, self.collections = self.labels[keep], self.collections[keep]
        return removed

    def ids_in(self, collections: set[str]) -> Ids:
        """The (sorted) ids of the vectors in these collections."""
        codes = [self._codes[name] for name in collections if name in self._codes]
        return self.ids[np.isin(self.collections, codes)]

    def counts(self) -> dict[str, dict[str, int]]:
        """Vectors per collection and per label."""
        by_collection = np.bincount(self.collections, minlength=len(self.names))
        by_label = np.bincount(self.labels, minlength=len(LABELS))
        return {
            "collections": {name: int(n) for name, n in zip(self.names, by_collection, strict=True) if n},
            "labels": {label: int(n) for label, n in zip(LABELS, by_label, strict=True) if n},
        }

    def nbytes(self) -> int:
        """The memory its arrays hold (the collection names aside)."""
        return int(self.ids.nbytes + self.nodes.nbytes + self.labels.nbytes + self.collections.nbytes)

    def to_arrays(self) -> Arrays:
        return {
            "ids": self.ids,
            "nodes": self.nodes,
            "labels": self.labels,
            "collections": self.collections,
            "names": np.array(self.names, dtype=np.str_),
        }

    @classmethod
    def from_arrays(cls, arrays: Arrays) -> Sidecar:
        ids = arrays["ids"].astype(np.int64, copy=False)
        if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            raise ValueError("sidecar ids are not strictly increasing")
        sizes = {arrays[name].shape[0] for name in ("ids", "nodes", "labels", "collections")}
        if len(sizes) != 1:
            raise ValueError("sidecar arrays differ in length")
        return cls(
            ids,
            arrays["nodes"].astype(np.bytes_, copy=False),
            arrays["labels"].astype(np.uint8, copy=False),
            arrays["collections"].astype(np.int32, copy=False),
            [str(name) for name in arrays["names"]],
        )

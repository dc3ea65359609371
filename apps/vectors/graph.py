"""Reading from Neo4j the graph nodes that carry vectors, per embedding space."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from django.conf import settings
from neo4j import Driver

from apps.graph import cypher
from apps.graph.db import graph_read
from apps.vectors.config import check_space
from apps.vectors.spaces import collection_spaces
from apps.vectors.types import TEXT_SPACES

logger = logging.getLogger(__name__)

# (label, embedded property) of the nodes each space holds a vector for.
# A text space holds the texts of the collections in it (apps/vectors/spaces.py).
SPACE_UNITS: dict[str, tuple[tuple[str, str], ...]] = {
    "text": (("Chunk", "text"), ("Row", "text"), ("Image", "text")),
    "mtext": (("Chunk", "text"), ("Row", "text"), ("Image", "text")),
    "clip": (("Image", "path"),),
}


def _in_space(space: str) -> Callable[[str], bool]:
    """Whether a collection's units belong in ``space`` (a text space holds its own collections' only)."""
    if space not in TEXT_SPACES:
        return lambda _collection: True
    elsewhere = collection_spaces(None)  # the collections not in "text"
    return lambda collection: elsewhere.get(collection, "text") == space


class Unit(NamedTuple):
    """A graph node that should have a vector; ``content`` is what is embedded (text, or an image file)."""

    node_id: str
    label: str
    collection: str
    content: str


def _content(prop: str, value: str) -> str:
    return str(Path(settings.MEDIA_ROOT) / value) if prop == "path" else value


def graph_units(
    *, driver: Driver, space: str, with_content: bool, collections: set[str] | None = None, page: int = 2000
) -> Iterator[Unit]:
    """Every node of the space (optionally only these collections), page by page in id order."""
    in_space = _in_space(space)
    for label, prop in SPACE_UNITS[check_space(space)]:
        statement = cypher.vector_units_page(label, prop, with_content=with_content)
        after = ""
        while True:
            records = graph_read(driver, statement, after=after, limit=page)
            for record in records:
                collection = record["collection"]
                if collection is None or (collections is not None and collection not in collections):
                    continue  # an orphan (no document) or another collection
                if not in_space(collection):
                    continue  # a collection of the other text space
                content = _content(prop, record["content"]) if with_content else ""
                yield Unit(record["id"], label, collection, content)
            if len(records) < page:
                break
            after = max(record["id"] for record in records)


def graph_units_by_id(*, driver: Driver, space: str, label: str, node_ids: Sequence[str]) -> list[Unit]:
    """Those of these nodes (all of one label) that the space holds, with their content."""
    [prop] = [prop for unit_label, prop in SPACE_UNITS[check_space(space)] if unit_label == label]
    records = graph_read(driver, cypher.vector_units_by_id(label, prop), ids=list(node_ids))
    in_space = _in_space(space)
    return [
        Unit(record["id"], label, record["collection"], _content(prop, record["content"]))
        for record in records
        if record["collection"] is not None and in_space(record["collection"])
    ]

"""Each collection's text space: "text" (the deployment's text embedder) or "mtext" (multilingual).

A collection's chunks, rows and image texts are embedded in one text space, settled when its first
documents are written (``collection_space_settle``): RAGKG_COLLECTION_SPACE, where ``auto`` puts a
collection whose first documents are mostly not in English in "mtext", and everything else in
"text" (which keeps MiniLM's speed for English). A question is embedded once in each space its
collections use; each space holds only its own collections' vectors, so each is searched with the
question's collection filter as it is, and the cosines of "mtext" are put on the text space's scale
(``space_score``) before the results of both are merged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from django.conf import settings

from apps.vectors.models import CollectionSpace
from apps.vectors.types import TEXT_SPACES

TEXT, MULTILINGUAL = "text", "mtext"
AUTO = "auto"  # a new collection's space settled by its first documents' language
# What a user picks for a new collection (the upload form, the REST API).
SPACE_CHOICES = (
    (AUTO, "by its documents' language"),
    (TEXT, "English (MiniLM, fastest)"),
    (MULTILINGUAL, "multilingual (e5-small)"),
)
ENGLISH = ("en", "und")  # "und": no letters to judge by (tables of numbers, images without text)


def space_for_language(language: str, *, setting: str | None = None, text_embedder: str | None = None) -> str:
    """The space a new collection whose first documents are mostly in ``language`` goes to."""
    chosen = setting or settings.COLLECTION_SPACE
    if chosen != "auto":
        return chosen
    if (text_embedder or settings.TEXT_EMBEDDER) == "e5":  # the text space is multilingual already
        return TEXT
    return TEXT if language in ENGLISH else MULTILINGUAL


def collection_space_settle(collection: str, language: str) -> str:
    """The collection's text space, decided now (and kept) if its documents had none yet."""
    row, _ = CollectionSpace.objects.get_or_create(
        collection=collection, defaults={"space": space_for_language(language), "language": language}
    )
    return row.space


def collection_space_set(collection: str, space: str) -> None:
    """Put the collection in ``space`` (its vectors must be moved: ``manage.py vectors respace``)."""
    if space not in TEXT_SPACES:
        raise ValueError(f"unknown text space {space!r} (use one of {', '.join(TEXT_SPACES)})")
    CollectionSpace.objects.update_or_create(collection=collection, defaults={"space": space})


def collection_space_choose(collection: str, space: str) -> None:
    """A new collection's space as its creator chose it (``SPACE_CHOICES``); ``auto`` leaves it to its
    first documents."""
    if space != AUTO:
        collection_space_set(collection, space)


def settled_spaces(collections: Iterable[str]) -> dict[str, str]:
    """The text space of each named collection whose space is settled (chosen, or set by its documents)."""
    return dict(CollectionSpace.objects.filter(collection__in=list(collections)).values_list("collection", "space"))


def collection_spaces(collections: Iterable[str] | None) -> dict[str, str]:
    """The text space of each named collection (every collection not in "text", for None)."""
    rows = (
        CollectionSpace.objects.all()
        if collections is None
        else CollectionSpace.objects.filter(collection__in=list(collections))
    )
    found = dict(rows.values_list("collection", "space"))
    if collections is None:
        return {name: space for name, space in found.items() if space != TEXT}
    return {name: found.get(name, TEXT) for name in collections}


def multilingual_collections() -> list[str]:
    return list(CollectionSpace.objects.filter(space=MULTILINGUAL).values_list("collection", flat=True))


def spaces_used(spaces: Mapping[str, str], collections: Sequence[str] | None) -> tuple[str, ...]:
    """The text spaces a question about ``collections`` (None: every one) is embedded in, text first,
    from their spaces as ``collection_spaces`` gives them (nothing known: text)."""
    used = set(spaces.values())
    if collections is None or not spaces:
        used.add(TEXT)
    return tuple(space for space in TEXT_SPACES if space in used)


def text_spaces_of(collections: Sequence[str] | None) -> tuple[str, ...]:
    return spaces_used(collection_spaces(collections), collections)


def space_score(space: str, cosine: float, *, cjk: bool = False, cross_script: bool = False) -> float:
    """A cosine of ``space`` on the text space's scale. e5's cosines run higher for Chinese passages and
    lower for a question in another script than its passage, so mtext has three maps: across scripts
    (VECTORS_MTEXT_CROSS_*), a Chinese passage (VECTORS_MTEXT_CJK_*), and the rest (VECTORS_MTEXT_*)."""
    if space != MULTILINGUAL:
        return cosine
    if cross_script:
        return settings.VECTORS_MTEXT_CROSS_SCALE * cosine + settings.VECTORS_MTEXT_CROSS_OFFSET
    if cjk:
        return settings.VECTORS_MTEXT_CJK_SCALE * cosine + settings.VECTORS_MTEXT_CJK_OFFSET
    return settings.VECTORS_MTEXT_SCALE * cosine + settings.VECTORS_MTEXT_OFFSET

"""What can go wrong with a vector index, as distinct exception types."""

from __future__ import annotations


class VectorIndexError(Exception):
    """Base class of the vector layer's errors."""


class IndexMissing(VectorIndexError):
    """Nothing has been saved for this space yet."""


class IndexCorrupt(VectorIndexError):
    """A saved index is unreadable, incomplete or fails its checksum."""


class IndexMismatch(VectorIndexError):
    """A saved index was made for another embedding model or dimension."""


class IdCollision(VectorIndexError):
    """Two different graph nodes map to the same 63-bit vector id."""


class EmbedderUnavailable(VectorIndexError):
    """No embedding model is wired for this space."""


class IndexSaveFailed(VectorIndexError, OSError):
    """A new version could not be written (a full disk, say); the saved version is unchanged."""


class StoreUnavailable(VectorIndexError):
    """The shared vector store (the database) cannot be read, and this process's copy is too old to serve."""

"""The backup tests use the vector tests' private vector folder (a small exact text space)."""

from tests.unit.vectors.conftest import vectors_dir

__all__ = ["vectors_dir"]

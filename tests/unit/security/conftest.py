from __future__ import annotations

import pytest

from apps.accounts import throttle
from tests.unit.security.fakes import MemoryFailureStore


@pytest.fixture(autouse=True)
def failures(monkeypatch: pytest.MonkeyPatch) -> MemoryFailureStore:
    """The log-in throttle's counters, in memory for every security unit test."""
    store = MemoryFailureStore()
    monkeypatch.setattr(throttle, "failure_store", lambda: store)
    return store

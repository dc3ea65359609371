"""A stand-in Neo4j driver for the curation pages' unit tests: each statement the test expects
answers canned records (or a function of the query's parameters); any other statement fails."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Records = list[dict[str, Any]]
Answer = Records | Callable[[dict[str, Any]], Records]


class FakeDriver:
    def __init__(self, answers: Mapping[str, Answer] | None = None) -> None:
        self.answers: dict[str, Answer] = dict(answers or {})
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def execute_query(self, statement: str, database_: str | None = None, **params: Any) -> tuple[Records, None, None]:
        params.pop("routing_", None)
        self.calls.append((statement, params))
        if statement not in self.answers:
            raise AssertionError(f"unexpected statement: {statement.strip()[:80]}")
        answer = self.answers[statement]
        return (answer(params) if callable(answer) else answer), None, None

    def params_of(self, statement: str) -> list[dict[str, Any]]:
        return [params for sent, params in self.calls if sent == statement]


class DownDriver:
    """A driver whose every query fails the way an unreachable Neo4j does."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def execute_query(self, statement: str, database_: str | None = None, **params: Any) -> tuple[Records, None, None]:
        raise self.error

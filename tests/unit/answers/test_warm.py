"""Warm-up: the models load in a background thread at process start; a failure is logged and the
process goes on (the model then loads on first use); RAGKG_WARM_UP=0 turns it off."""

from __future__ import annotations

import logging

import pytest
from pytest_django.fixtures import Settings

from apps.answers import warm


def test_the_warm_up_runs_in_a_daemon_thread(settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    settings.WARM_UP = True
    ran: list[str] = []
    thread = warm.warm_in_background("test", lambda: ran.append("loaded"))
    assert thread is not None and thread.daemon and thread.name == "warm-test"
    thread.join(5)
    assert ran == ["loaded"]


def test_a_failed_warm_up_is_logged_and_harmless(settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    settings.WARM_UP = True

    def broken() -> None:
        raise OSError("no model files")

    with caplog.at_level(logging.ERROR, logger="apps.answers.warm"):
        thread = warm.warm_in_background("broken", broken)
        assert thread is not None
        thread.join(5)
    assert "warm-up of broken failed; it loads on first use" in caplog.text


def test_it_can_be_turned_off(settings: Settings) -> None:
    settings.WARM_UP = False
    assert warm.warm_in_background("off", lambda: None) is None


def test_the_generation_worker_alone_warms_the_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    import ragkg.celery as app

    started: list[str] = []
    monkeypatch.setattr(warm, "warm_in_background", lambda name, fn: started.append(name))
    app.note_generation_node(sender="ingest@host")
    app.warm_generator()
    app.note_generation_node(sender="gpu@host")
    app.warm_generator()
    assert started == ["generator"]
    app.note_generation_node(sender=None)


def test_the_generation_warm_up_runs_the_answers_system_prompt_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from apps.answers.prompt import SYSTEM
    from apps.models import registry

    calls: list[tuple[str, int, str | None]] = []

    class Loaded:
        def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str:
            calls.append((prompt, max_new_tokens, system))
            return "Gw"

    monkeypatch.setattr(registry, "generator", lambda: Loaded())
    warm.warm_generation()
    assert calls == [(warm.WARM_PROMPT, 2, SYSTEM)]


def test_the_retrieval_warm_up_loads_models_vectors_and_a_graph_connection(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from types import SimpleNamespace

    from apps.answers import analysis, tools
    from apps.graph import cypher, db, driver
    from apps.vectors import registry, spaces
    from apps.vectors.errors import VectorIndexError

    done: list[str] = []
    monkeypatch.setattr(spaces, "multilingual_collections", list)

    class NoIndexYet:
        def get(self, space: str) -> None:
            done.append(f"vectors {space}")
            raise VectorIndexError("no index yet")

    text = SimpleNamespace(embed_queries=lambda questions: done.append(f"embed {questions[0]}"))
    monkeypatch.setattr(
        tools, "default_tools", lambda: SimpleNamespace(tokenize=None, ner_model=None, text=text, clip=None)
    )
    monkeypatch.setattr(analysis, "query_analyse", lambda **kwargs: done.append(f"analyse {kwargs['question']}"))
    monkeypatch.setattr(registry, "vector_registry", NoIndexYet)
    monkeypatch.setattr(driver, "get_driver", lambda: "driver")
    monkeypatch.setattr(db, "graph_read", lambda d, statement: done.append(f"graph {d} {statement}"))
    with caplog.at_level(logging.INFO, logger="apps.answers.warm"):
        warm.warm_retrieval()
    question = warm.WARM_QUESTION
    assert done == [f"analyse {question}", f"embed {question}", "vectors text", f"graph driver {cypher.PING}"]
    assert "the text vectors are not loaded" in caplog.text  # an empty install warms the rest


def test_the_retrieval_warm_up_loads_the_multilingual_space_when_a_collection_uses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from apps.answers import analysis, tools
    from apps.graph import db, driver
    from apps.vectors import registry, spaces

    done: list[str] = []

    class Indexes:
        def get(self, space: str) -> None:
            done.append(f"vectors {space}")

    def embedder(name: str) -> SimpleNamespace:
        return SimpleNamespace(embed_queries=lambda questions: done.append(f"embed {name}"))

    loaded = SimpleNamespace(tokenize=None, ner_model=None, text=embedder("text"), clip=None, embedder=embedder)
    monkeypatch.setattr(tools, "default_tools", lambda: loaded)
    monkeypatch.setattr(spaces, "multilingual_collections", lambda: ["wenzhang"])
    monkeypatch.setattr(analysis, "query_analyse", lambda **kwargs: done.append("analyse"))
    monkeypatch.setattr(registry, "vector_registry", Indexes)
    monkeypatch.setattr(driver, "get_driver", lambda: "driver")
    monkeypatch.setattr(db, "graph_read", lambda d, statement: done.append("graph"))
    warm.warm_retrieval()
    assert done == ["analyse", "embed text", "analyse", "embed mtext", "vectors text", "vectors mtext", "graph"]

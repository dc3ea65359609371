"""What writes the answers: the configured OpenAI-compatible server(s) (``RAGKG_GENERATOR_URL``), one
``OpenAIEngine`` per process and settings so that its circuits last, or the generator in this process."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from django.conf import settings

from apps.models.generator import first_token_ids
from apps.models.interfaces import AnswerEngine
from apps.models.openai_engine import EngineSettings, OpenAIEngine
from apps.models.registry import generator, generator_tokenizer, profile_specs
from apps.models.server_logprobs import AnswerScorer, LlamaCppScorer, VllmScorer

_guard = threading.Lock()


_engines: dict[tuple[object, ...], OpenAIEngine] = {}


def engine_settings() -> EngineSettings | None:
    """The OpenAI-compatible engine's settings, or None when answers are written in this process."""
    if not settings.GENERATOR_URLS:
        return None
    return EngineSettings(
        urls=tuple(settings.GENERATOR_URLS),
        model=settings.GENERATOR_MODEL,
        api_key=settings.GENERATOR_API_KEY,
        connect_timeout=settings.GENERATOR_CONNECT_TIMEOUT,
        read_timeout=settings.GENERATOR_READ_TIMEOUT,
        retries=settings.GENERATOR_RETRIES,
        circuit_failures=settings.GENERATOR_CIRCUIT_FAILURES,
        circuit_seconds=settings.GENERATOR_CIRCUIT_SECONDS,
    )


def remote_engine() -> OpenAIEngine | None:
    """The configured OpenAI-compatible engine (one per process and settings, its circuits with it), or
    None when answers are written in this process."""
    config = engine_settings()
    if config is None:
        return None
    key = (config, settings.MODEL_PROFILE, settings.GENERATOR)
    with _guard:
        if key not in _engines:
            _engines[key] = OpenAIEngine(config, token_ids=_reader_first_tokens)
        return _engines[key]


def answer_engine() -> AnswerEngine:
    """What writes the answers: the configured server(s), or the generator in this process."""
    return remote_engine() or generator()


def _reader_first_tokens(words: Sequence[str]) -> frozenset[int]:
    """The first token ids of ``words`` in the local generator's tokenizer, which the engine uses too
    when it serves a model of the same family (checked by name; otherwise none are biased)."""
    engine = remote_engine()
    local = profile_specs().generator.name
    if engine is None or tokenizer_family(local) != tokenizer_family(engine.name):
        return frozenset()
    return first_token_ids(generator_tokenizer(), words)


TOKENIZER_FAMILIES = ("qwen2.5", "qwen2", "smollm2", "llama-3", "llama3", "mistral", "gemma")


def tokenizer_family(name: str) -> str:
    """The tokenizer family a model's name says (``qwen2.5`` for every Qwen2.5 size and variant), or
    the name itself."""
    flat = name.lower().replace("_", "-")
    return next((family for family in TOKENIZER_FAMILIES if family in flat), flat)


def engines_forget() -> None:
    """Close and drop this process's engines (tests; after a settings change)."""
    with _guard:
        for engine in _engines.values():
            engine.close()
        _engines.clear()


class ExactEngineError(Exception):
    """Exact attribution cannot be scored through the configured server (said in words)."""


def exact_scorer() -> AnswerScorer | None:
    """What scores exact attribution's ablated prompts: None (the generator here), or the engine server
    that writes the answers (``PROVENANCE_EXACT_ENGINE``), when it serves a model of the local tokenizer."""
    kind = settings.PROVENANCE_EXACT_ENGINE
    if kind == "local":
        return None
    engine = remote_engine()
    if engine is None:
        raise ExactEngineError(f"PROVENANCE_EXACT_ENGINE={kind} needs an engine server (RAGKG_GENERATOR_URL)")
    url = engine.urls[0]
    served = settings.GENERATOR_MODEL or next(iter(engine.server_models(url)), "")
    local = profile_specs().generator.name
    if tokenizer_family(served) != tokenizer_family(local):
        raise ExactEngineError(
            f"the server at {url} serves {served or 'an unnamed model'}, whose tokens are not those of {local} "
            "(the local generator): exact attribution through it needs a model of the same tokenizer"
        )
    if kind == "vllm":
        return VllmScorer(url, model=served, api_key=settings.GENERATOR_API_KEY)
    return LlamaCppScorer(url, api_key=settings.GENERATOR_API_KEY)

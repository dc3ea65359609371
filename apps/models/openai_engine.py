"""An answer engine that is a server speaking the OpenAI chat API: vLLM, llama.cpp's server, Ollama,
TGI or a hosted API (``RAGKG_GENERATOR_URL``: one base URL, or several separated by commas).

The request is the in-process generator's: the same chat messages (``chat_messages``), greedy decoding
(``temperature`` 0, a fixed seed), the same stop texts (sent to the server and applied again here), the
same token budget. Several servers share the answers round-robin. A server that cannot be reached, or
answers 5xx/429 before the first token, is tried again (the next server first) up to
``retries`` times; once a token has been written nothing is retried (the answer would change under
the reader's eyes). Each server has a circuit: after ``circuit_failures`` failed requests in a row it
gets no request for ``circuit_seconds`` (then one trial request), and an answer finding every circuit
open fails at once with "the answer engine at ... is unreachable". Closing the stream closes the
connection, which vLLM, llama.cpp's server and Ollama take as a cancellation.

What the in-process generator does inside its decoding loop and a server cannot be asked to do, this
engine does on the text: an answer whose first word is one it must not begin with (a "Yes" to a
"Who ...?") is asked again once with those words' first tokens biased away (``logit_bias``, when the
engine's tokenizer is known), and an answer that starts repeating four words of itself is cut there.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from apps.models.chat import chat_messages
from apps.models.generator import STOP_TEXTS, stop_at

logger = logging.getLogger(__name__)

# The OpenAI API takes at most four stop sequences; the chat template's end tokens end a reply anyway.
SERVER_STOPS = tuple(stop for stop in STOP_TEXTS if not stop.startswith("<|"))[:4]
REPEAT_WORDS = 4  # an answer writing the same four words twice is cut before the second time
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
SEED = 0


class EngineUnavailable(Exception):
    """No server of the answer engine could start an answer; ``message`` is for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EngineBroken(EngineUnavailable):
    """The server stopped in the middle of an answer (after its first token)."""


@dataclass(frozen=True)
class EngineSettings:
    """The engine's settings (``ragkg/settings.py``: ``RAGKG_GENERATOR_*``)."""

    urls: tuple[str, ...]
    model: str = ""  # empty: the first model the server lists
    api_key: str = ""
    connect_timeout: float = 3.0
    read_timeout: float = 60.0  # the longest wait for the first token, or between two
    retries: int = 2
    circuit_failures: int = 3
    circuit_seconds: float = 30.0


@dataclass
class Circuit:
    """One server's failures in a row; open (no request) for ``seconds`` after ``threshold`` of them."""

    threshold: int
    seconds: float
    failures: int = 0
    opened_at: float | None = None
    last_error: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def allows(self, now: float) -> bool:
        """Closed, or open long enough for one trial request (half-open)."""
        with self._lock:
            return self.opened_at is None or now - self.opened_at >= self.seconds

    def succeeded(self) -> None:
        with self._lock:
            self.failures, self.opened_at, self.last_error = 0, None, ""

    def failed(self, now: float, error: str) -> None:
        with self._lock:
            self.failures += 1
            self.last_error = error
            if self.failures >= self.threshold:
                self.opened_at = now

    def retry_in(self, now: float) -> float:
        with self._lock:
            return 0.0 if self.opened_at is None else max(0.0, self.seconds - (now - self.opened_at))


def base_url(url: str) -> str:
    """A server's base URL as the OpenAI client takes it (``…/v1``), without a trailing slash."""
    url = url.rstrip("/")
    return url if re.search(r"/v\d+$", url) else f"{url}/v1"


def sse_data(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream's ``data:`` lines, up to ``[DONE]``."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        if data:
            yield json.loads(data)


def delta_text(event: dict[str, Any]) -> str:
    """The text a streamed chat completion chunk adds ("" for role-only and usage chunks)."""
    if "error" in event:
        error = event["error"]
        raise EngineBroken(
            f"the server reported an error: {error.get('message', error) if isinstance(error, dict) else error}"
        )
    choices = event.get("choices") or []
    if not choices:
        return ""
    delta = choices[0].get("delta") or {}
    return str(delta.get("content") or "")


def repeat_cut(text: str, size: int = REPEAT_WORDS) -> int | None:
    """Where ``text`` starts writing ``size`` of its own words a second time (after its first line,
    whose short answer the supporting sentence may repeat), or None."""
    first_line_end = text.find("\n", len(text) - len(text.lstrip()))
    words = list(re.finditer(r"\S+", text))
    seen: set[tuple[str, ...]] = set()
    for index in range(len(words) - size + 1):
        gram = tuple(word.group().lower() for word in words[index : index + size])
        if gram in seen and (first_line_end < 0 or words[index].start() > first_line_end):
            return words[index].start()
        seen.add(gram)
    return None


def first_word(text: str) -> str | None:
    """The answer's first word once it is complete (a space or line follows it), else None."""
    match = re.match(r"\s*(\w+)(?=\W)", text)
    return match.group(1) if match else None


class OpenAIEngine:
    """``AnswerEngine`` on OpenAI-compatible servers (see the module's docstring). ``token_ids``, when
    given, maps a word to the first token ids an answer could begin it with (the engine's tokenizer,
    when it is the local model's), for the re-ask that avoids a first word."""

    kind = "openai"

    def __init__(
        self,
        config: EngineSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        token_ids: Callable[[Sequence[str]], frozenset[int]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not config.urls:
            raise ValueError("an OpenAI-compatible engine needs at least one server URL")
        self._config = config
        self._urls = tuple(base_url(url) for url in config.urls)
        self._circuits = {url: Circuit(config.circuit_failures, config.circuit_seconds) for url in self._urls}
        self._next = 0
        self._lock = threading.Lock()
        self._clock = clock
        self._token_ids = token_ids
        self._models: dict[str, str] = {}
        timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
        self._client = httpx.Client(timeout=timeout, transport=transport, headers=self._headers())

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._config.api_key}"} if self._config.api_key else {}

    @property
    def name(self) -> str:
        model = self._config.model or next(iter(self._models.values()), "")
        return f"{model or 'model'} at {', '.join(self._urls)}"

    @property
    def urls(self) -> tuple[str, ...]:
        return self._urls

    @property
    def where(self) -> str:
        return ", ".join(self._urls)

    def close(self) -> None:
        self._client.close()

    # --- which server --------------------------------------------------------------------

    def _order(self) -> list[str]:
        """The servers to try, starting with the next in turn; those with an open circuit left out."""
        now = self._clock()
        with self._lock:
            start = self._next
            self._next = (self._next + 1) % len(self._urls)
        turn = [self._urls[(start + step) % len(self._urls)] for step in range(len(self._urls))]
        return [url for url in turn if self._circuits[url].allows(now)]

    def unreachable_message(self) -> str:
        now = self._clock()
        parts = []
        for url in self._urls:
            circuit = self._circuits[url]
            wait = circuit.retry_in(now)
            cause = f": {circuit.last_error}" if circuit.last_error else ""
            parts.append(f"{url}{cause}" + (f" (next try in {wait:.0f} s)" if wait else ""))
        return f"The answer engine at {'; '.join(parts)} is unreachable."

    def circuits(self) -> dict[str, dict[str, object]]:
        """Each server's circuit: failures in a row, open or not, the last error (health reports)."""
        now = self._clock()
        return {
            url: {
                "failures": circuit.failures,
                "open": not circuit.allows(now),
                "retry_in_s": round(circuit.retry_in(now), 1),
                "last_error": circuit.last_error,
            }
            for url, circuit in self._circuits.items()
        }

    # --- the model a server serves -------------------------------------------------------

    def server_models(self, url: str, *, timeout: float | None = None) -> list[str]:
        """The model ids ``url`` lists (``GET /models``); raises httpx errors."""
        response = self._client.get(f"{url}/models", timeout=timeout or self._config.connect_timeout + 2)
        response.raise_for_status()
        return [str(item.get("id")) for item in response.json().get("data", []) if item.get("id")]

    def _model(self, url: str) -> str:
        if self._config.model:
            return self._config.model
        if url not in self._models:
            models = self.server_models(url)
            if not models:
                raise EngineUnavailable(f"The answer engine at {url} serves no model.")
            self._models[url] = models[0]
        return self._models[url]

    # --- answering -----------------------------------------------------------------------

    def _body(
        self, url: str, prompt: str, system: str | None, max_new_tokens: int, bias: frozenset[int]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model(url),
            "messages": chat_messages(prompt, system),
            "max_tokens": max_new_tokens,
            "temperature": 0,
            "top_p": 1,
            "seed": SEED,
            "stop": list(SERVER_STOPS),
            "stream": True,
        }
        if bias:
            body["logit_bias"] = {str(token): -100 for token in sorted(bias)}
        return body

    def _pieces(self, url: str, body: dict[str, Any]) -> abc.Generator[str, None, None]:
        """The text pieces of one streamed request. Raises ``_BeforeFirst`` for a failure that allows a
        retry (nothing was written), ``EngineBroken`` for one after the first piece."""
        written = False
        try:
            with self._client.stream("POST", f"{url}/chat/completions", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    detail = response.text[:200].strip()
                    raise _BeforeFirst(
                        f"HTTP {response.status_code}{f': {detail}' if detail else ''}",
                        retry=response.status_code in RETRYABLE_STATUS,
                    )
                for event in sse_data(response.iter_lines()):
                    piece = delta_text(event)
                    if piece:
                        written = True
                        yield piece
        except httpx.HTTPError as exc:
            reason = _describe(exc)
            if written:
                raise EngineBroken(f"The answer engine at {url} stopped while writing this answer ({reason}).") from exc
            raise _BeforeFirst(reason, retry=True) from exc
        except ValueError as exc:  # a line that is not JSON
            raise EngineBroken(
                f"The answer engine at {url} sent a reply that is not the OpenAI format ({exc})."
            ) from exc

    def _attempts(
        self, prompt: str, system: str | None, max_new_tokens: int, bias: frozenset[int]
    ) -> abc.Generator[str, None, None]:
        """The pieces of the first request that starts, trying servers and retrying before the first
        piece; every circuit open, or every try failed: ``EngineUnavailable``."""
        tries = 0
        while True:
            order = self._order()
            if not order:
                raise EngineUnavailable(self.unreachable_message())
            url = order[0]
            try:
                pieces = self._pieces(url, self._body(url, prompt, system, max_new_tokens, bias))
                first = next(pieces, None)
            except _BeforeFirst as exc:
                self._circuits[url].failed(self._clock(), exc.reason)
                logger.warning("answer engine %s: %s (try %d)", url, exc.reason, tries + 1)
                tries += 1
                if not exc.retry or tries > self._config.retries:
                    raise EngineUnavailable(self.unreachable_message()) from exc
                time.sleep(min(2.0, 0.2 * 2 ** (tries - 1)))
                continue
            except httpx.HTTPError as exc:  # listing the server's model failed
                self._circuits[url].failed(self._clock(), _describe(exc))
                tries += 1
                if tries > self._config.retries:
                    raise EngineUnavailable(self.unreachable_message()) from exc
                continue
            self._circuits[url].succeeded()
            if first is None:
                return
            yield first
            yield from pieces
            return

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> abc.Generator[str, None, None]:
        """Text pieces as the server writes them, cut at the stop texts and at a repetition; closing it
        early closes the connection (the server stops)."""
        avoid = {word.lower() for word in avoid_first}
        bias: frozenset[int] = frozenset()
        for _ in range(2):
            pieces = self._attempts(prompt, system, max_new_tokens, bias)
            try:
                held = ""
                if avoid:  # the first word is held back until it is known to be allowed
                    for piece in pieces:
                        held += piece
                        word = first_word(held)
                        if word is not None or stop_at(held) is not None:
                            break
                    word = first_word(held) or held.strip()
                    if word.lower() in avoid and not bias and self._token_ids is not None:
                        bias = self._token_ids(avoid_first)
                        if bias:  # the server's tokens are known: ask again without those first tokens
                            logger.info("answer engine: the answer began with %r; asking again without it", word)
                            continue
                yield from _cut(held, pieces)
                return
            finally:
                pieces.close()

    def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str:
        return "".join(self.stream(prompt, max_new_tokens=max_new_tokens, system=system)).strip()


def _cut(held: str, pieces: Iterator[str]) -> Iterator[str]:
    """``held`` and then ``pieces``, ending before a stop text or a repetition (never shown)."""
    written = ""
    for piece in _chain(held, pieces):
        text = written + piece
        cuts = [cut for cut in (stop_at(text), repeat_cut(text)) if cut is not None]
        if cuts:
            if rest := text[len(written) : min(cuts)]:
                yield rest
            return
        written = text
        yield piece


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    if first:
        yield first
    yield from rest


class _BeforeFirst(Exception):
    """A request failed before its first piece: ``retry`` when trying again may help."""

    def __init__(self, reason: str, *, retry: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


def _describe(exc: BaseException) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection refused"
    if isinstance(exc, httpx.TimeoutException):
        return f"no reply in time ({type(exc).__name__})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the connection was closed"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")

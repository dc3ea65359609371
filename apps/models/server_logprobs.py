"""Log-probabilities of given answer tokens under a given prompt, asked of an engine server: what exact
(ablation) attribution needs from the model that wrote an answer, without running that model here.

- llama.cpp's server (``/completion``): one request per answer token, the prompt being the token ids of
  the prompt and the answer so far; the server's prompt cache keeps what the previous request read, so
  each request after the first reads one token. The answer token's log-probability is read from the
  ``n_probs`` most probable next tokens (before sampling); a token outside them gets the lowest of them
  (an upper bound, so a removed source's effect is never overstated).
- vLLM (``/v1/completions`` with ``prompt_logprobs``): one request per prompt, every position's
  log-probability of its actual token in the reply.

Token ids are the local tokenizer's, so the server must serve a model of the same tokenizer (checked by
the caller: ``apps.models.engines.same_tokenizer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

TOP = 100  # llama.cpp: the next-token candidates returned per position


class AnswerScorer(Protocol):
    """Log-probability of each of ``answer`` under ``prompt`` (token ids), in order."""

    @property
    def name(self) -> str: ...

    def logprobs(self, prompt: Sequence[int], answer: Sequence[int]) -> npt.NDArray[np.float32]: ...


def server_root(url: str) -> str:
    """A base URL without its ``/v1`` (llama.cpp's native endpoints sit at the root)."""
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class LlamaCppScorer:
    """``AnswerScorer`` through llama.cpp's ``/completion`` (see the module's docstring)."""

    def __init__(self, url: str, *, api_key: str = "", top: int = TOP, transport: httpx.BaseTransport | None = None):
        self._root = server_root(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=httpx.Timeout(300, connect=5), headers=headers, transport=transport)
        self._top = top

    @property
    def name(self) -> str:
        return f"llama.cpp at {self._root}"

    def _next(self, ids: list[int]) -> dict[int, float]:
        body = {
            "prompt": ids,
            "n_predict": 1,
            "n_probs": self._top,
            "post_sampling_probs": False,
            "temperature": 0,
            "cache_prompt": True,
        }
        response = self._client.post(f"{self._root}/completion", json=body)
        response.raise_for_status()
        probabilities: list[dict[str, Any]] = response.json().get("completion_probabilities") or []
        if not probabilities:
            raise ValueError(f"{self.name} returned no token probabilities (n_probs)")
        return {int(item["id"]): float(item["logprob"]) for item in probabilities[0].get("top_logprobs", [])}

    def logprobs(self, prompt: Sequence[int], answer: Sequence[int]) -> npt.NDArray[np.float32]:
        values = []
        for position, token in enumerate(answer):
            candidates = self._next([*prompt, *answer[:position]])
            values.append(candidates.get(int(token), min(candidates.values(), default=-30.0)))
        return np.asarray(values, dtype=np.float32)

    def close(self) -> None:
        self._client.close()


class VllmScorer:
    """``AnswerScorer`` through vLLM's ``prompt_logprobs`` (one request per prompt)."""

    def __init__(
        self, url: str, *, model: str, api_key: str = "", transport: httpx.BaseTransport | None = None
    ) -> None:
        self._url = url.rstrip("/")
        self._model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=httpx.Timeout(300, connect=5), headers=headers, transport=transport)

    @property
    def name(self) -> str:
        return f"vLLM at {self._url}"

    def logprobs(self, prompt: Sequence[int], answer: Sequence[int]) -> npt.NDArray[np.float32]:
        ids = [*prompt, *answer]
        body = {"model": self._model, "prompt": ids, "max_tokens": 1, "prompt_logprobs": 0, "temperature": 0}
        response = self._client.post(f"{self._url}/completions", json=body)
        response.raise_for_status()
        rows = response.json()["choices"][0]["prompt_logprobs"]
        values = []
        for position in range(len(prompt), len(ids)):
            row = rows[position] or {}
            entry = row.get(str(ids[position]))
            values.append(float(entry["logprob"]) if isinstance(entry, dict) else -30.0)
        return np.asarray(values, dtype=np.float32)

    def close(self) -> None:
        self._client.close()

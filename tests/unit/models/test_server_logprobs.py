"""Exact attribution's scoring through an engine server, on a fake transport: the requests llama.cpp's
server and vLLM are sent, and how the answer tokens' log-probabilities are read from their replies
(tests/integration/test_engine_server.py scores through a real llama.cpp server)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import numpy as np
import pytest

from apps.models.server_logprobs import LlamaCppScorer, VllmScorer, server_root


def test_llama_cpp_is_asked_one_position_at_a_time_and_a_token_outside_the_top_gets_their_lowest() -> None:
    bodies: list[dict[str, Any]] = []
    top = {2: [(7, -0.1), (8, -2.0)], 3: [(9, -0.5), (5, -4.0)]}  # next-token candidates by prompt length

    def server(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/completion"
        body = json.loads(request.content)
        bodies.append(body)
        candidates = [{"id": token, "logprob": value} for token, value in top[len(body["prompt"])]]
        return httpx.Response(200, json={"completion_probabilities": [{"top_logprobs": candidates}]})

    scorer = LlamaCppScorer("http://engine:8081/v1", transport=httpx.MockTransport(server), top=2)
    scores = scorer.logprobs([1, 2], [8, 6])  # 8 is in the first top; 6 is not in the second
    assert np.allclose(scores, [-2.0, -4.0])
    assert [body["prompt"] for body in bodies] == [[1, 2], [1, 2, 8]]
    assert bodies[0]["n_predict"] == 1 and bodies[0]["n_probs"] == 2 and bodies[0]["cache_prompt"] is True
    assert bodies[0]["post_sampling_probs"] is False
    assert scorer.name == "llama.cpp at http://engine:8081"


def test_vllm_gives_every_position_in_one_request() -> None:
    def server(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert body["prompt"] == [1, 2, 8, 6] and body["prompt_logprobs"] == 0 and body["model"] == "qwen"
        rows = [None, {"2": {"logprob": -1.0}}, {"8": {"logprob": -0.25}}, {"6": {"logprob": -3.0}}]
        return httpx.Response(200, json={"choices": [{"prompt_logprobs": rows}]})

    scorer = VllmScorer("http://gpu:8000/v1", model="qwen", transport=httpx.MockTransport(server))
    assert np.allclose(scorer.logprobs([1, 2], [8, 6]), [-0.25, -3.0])


def test_a_server_without_token_probabilities_is_an_error() -> None:
    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"content": "x"})

    scorer = LlamaCppScorer("http://engine:8081", transport=httpx.MockTransport(server))
    with pytest.raises(ValueError, match="no token probabilities"):
        scorer.logprobs([1], [2])
    assert server_root("http://engine:8081/v1/") == "http://engine:8081"

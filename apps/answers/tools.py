"""The configured models, indexes and graph driver for answering, and the parameters from settings."""

from __future__ import annotations

import atexit
import functools
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.conf import settings

from apps.answers.expansion import ExpansionParams
from apps.answers.lexical import LexicalParams
from apps.answers.linking import LinkParams
from apps.answers.pipeline import RetrievalParams, RetrievalTools
from apps.answers.ranker import learned_ranker
from apps.answers.rerank import BridgeParams
from apps.answers.seeds import SeedLimits
from apps.answers.selection import SelectionParams
from apps.graph.driver import get_driver
from apps.ingest.extraction import DEFAULT_MODEL
from apps.models import registry
from apps.models.rerank import EmbeddingReranker
from apps.vectors.services import vectors_get, vectors_search
from apps.vectors.spaces import collection_spaces

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


CHAT_TEMPLATE_TOKENS = 32  # the chat template's own tokens around the system and user messages


def retrieval_params(*, mode: str = "graph") -> RetrievalParams:
    """The answering settings as typed parameters (``mode`` graph or dense)."""
    return RetrievalParams(
        seeds=SeedLimits(settings.ANSWER_K_CHUNKS, settings.ANSWER_K_ROWS, settings.ANSWER_K_IMAGES),
        expansion=ExpansionParams(
            hops=settings.ANSWER_HOPS,
            fanout=settings.ANSWER_FANOUT,
            related_fanout=settings.ANSWER_RELATED_FANOUT,
            max_entities=settings.ANSWER_MAX_ENTITIES,
            max_degree=settings.ANSWER_MAX_DEGREE,
            decay=settings.ANSWER_DECAY,
            scoring=settings.ANSWER_SCORING,
            ppr_damping=settings.ANSWER_PPR_DAMPING,
            body_weight=settings.ANSWER_BODY_MENTION_WEIGHT,
            synonym_min_score=settings.ANSWER_SYNONYM_MIN_SCORE,
        ),
        selection=SelectionParams(
            k_min=settings.ANSWER_K_MIN,
            k_max=max(settings.ANSWER_K_MIN, settings.ANSWER_K_MAX),
            k_per_bit=settings.ANSWER_K_PER_BIT,
            duplicate_cosine=settings.ANSWER_DUPLICATE_COSINE,
            context_tokens=settings.ANSWER_CONTEXT_TOKENS - settings.ANSWER_MAX_NEW_TOKENS - CHAT_TEMPLATE_TOKENS,
        ),
        rerank_pool=settings.ANSWER_RERANK_POOL,
        learned=settings.ANSWER_RANKER == "learned",
        graph_weight=settings.ANSWER_GRAPH_WEIGHT,
        bridges=BridgeParams(
            starts=settings.ANSWER_BRIDGE_STARTS,
            position=settings.ANSWER_BRIDGE_POSITION,
            path_weight=settings.ANSWER_BRIDGE_PATH_WEIGHT,
        ),
        lexical=LexicalParams(k=settings.ANSWER_LEXICAL_K, weight=settings.ANSWER_LEXICAL_WEIGHT),
        linking=LinkParams(
            spans=settings.ANSWER_LINK_SPANS,
            max_words=settings.ANSWER_LINK_MAX_WORDS,
            embedding=settings.ANSWER_LINK_EMBEDDING,
            embedding_min_score=settings.ANSWER_LINK_EMBEDDING_MIN_SCORE,
            max_degree=settings.ANSWER_MAX_DEGREE,
        ),
        mode=mode,
    )


@functools.cache
def _freeze_heap() -> None:
    """Move everything loaded so far (models, tokenizers) out of the garbage collector's sight:
    a full collection then no longer walks millions of long-lived objects in the middle of a
    question (one such pass took 0.7 s at 100k chunks). They are handed back at exit, so the
    interpreter's last collection frees them: frozen, the cycles among the modules' objects
    outlive the C extensions' teardown, and triton's bindings print "nanobind: leaked ..."."""
    gc.collect()
    gc.freeze()
    atexit.register(gc.unfreeze)


def _torch_threads(count: int) -> None:
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)


@functools.cache
def token_counter(tokenizer: PreTrainedTokenizerBase) -> Callable[[str], int]:
    """The generator's token count of a text, remembered for the last few thousand texts: the system
    message, the prompt's header and the blocks of sources that come back are not tokenized again."""

    @functools.lru_cache(maxsize=4096)
    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    return count


def default_tools() -> RetrievalTools:
    """This process's tools (each model loads once per process, on first use)."""
    _torch_threads(settings.ANSWER_TORCH_THREADS)
    text = registry.text_embedder()
    reranker = registry.reranker()
    tokenizer = registry.generator_tokenizer()
    stored_is_cosine = isinstance(reranker, EmbeddingReranker) and reranker.embedder is text
    tools = RetrievalTools(
        driver=get_driver(),
        text=text,
        clip=registry.clip_embedder(),
        reranker=None if stored_is_cosine else reranker,
        tokenize=tokenizer.tokenize,
        count_tokens=token_counter(tokenizer),
        search=vectors_search,
        stored_vectors=lambda ids, space: vectors_get(space=space, node_ids=list(ids)),
        ner_model=DEFAULT_MODEL,
        space_embedder=registry.space_embedder,
        collection_spaces=collection_spaces,
        # The learned ranker was trained on MiniLM's cosine: another reranker's scores are on another scale.
        ranker=learned_ranker() if stored_is_cosine else None,
    )
    _freeze_heap()
    return tools

"""Personalized PageRank over a small undirected graph given as edges (scipy sparse, power iteration)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from scipy import sparse


def personalized_pagerank(
    edges: Iterable[tuple[str, str]],
    restart: Mapping[str, float],
    *,
    damping: float = 0.5,
    iterations: int = 50,
    tolerance: float = 1e-8,
) -> dict[str, float]:
    """Stationary probability of a walk that follows an edge with probability ``damping`` and
    jumps back to a ``restart`` node (chosen in proportion to its weight) otherwise."""
    pairs = [(a, b) for a, b in edges if a != b]
    nodes = sorted({n for pair in pairs for n in pair} | {n for n, w in restart.items() if w > 0})
    if not nodes:
        return {}
    index = {node: i for i, node in enumerate(nodes)}
    rows = [index[a] for a, b in pairs] + [index[b] for a, b in pairs]
    cols = [index[b] for a, b in pairs] + [index[a] for a, b in pairs]
    adjacency = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    adjacency.data[:] = 1.0  # duplicate edges count once
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    transition = sparse.diags(np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)) @ adjacency
    teleport = np.array([max(restart.get(node, 0.0), 0.0) for node in nodes])
    teleport = teleport / teleport.sum() if teleport.sum() > 0 else np.full(len(nodes), 1.0 / len(nodes))
    rank = teleport.copy()
    for _ in range(iterations):
        walked = transition.T @ rank
        dangling = rank[degree == 0].sum()
        updated = damping * (walked + dangling * teleport) + (1 - damping) * teleport
        if np.abs(updated - rank).sum() < tolerance:
            rank = updated
            break
        rank = updated
    return {node: float(rank[i]) for node, i in index.items()}

"""BlockRank (Kamvar, Haveliwala, Manning & Golub 2003), as seed 003's ranking step uses it (pure).

1. Split the pages into blocks (a site or a registered domain: most links stay inside one).
2. Local PageRank inside each block, on the block's internal links only.
3. The block graph: an edge I -> J weighted by sum over links i -> j (i in I, j in J) of
   local(i) / outdeg(i) — the chance that a surfer standing in I, distributed by local rank, steps to J.
   Its PageRank is each block's importance.
4. local(i) * blockrank(block(i)) approximates the global PageRank. Seed 003 stops here: that product
   is its rank (`blockrank_local`, `rank --method blockrank-local`: no global iteration, each block's
   local rank computable on the machine that crawled it). By default we go on: the product is the
   start vector of the global PageRank, which then needs fewer iterations than from a uniform start.
   That final vector is PageRank itself (same fixed point, same tolerance): BlockRank only changes
   where iteration starts.

All blocks' local PageRanks are computed at once, as one power iteration over the block-diagonal
matrix of internal links with per-block teleport and normalisation (np.bincount), so a crawl of
100,000 small sites costs a few vectorised passes, not 100,000 small solves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .pagerank import DAMPING, MAX_ITERATIONS, TOLERANCE, Graph, pagerank, power_iterate

# Local ranks only shape the start vector: their own error is far below the approximation error
# of BlockRank itself well before they converge tightly (on the benchmark's graphs, 1e-2 starts the
# global phase as well as 1e-6 does, in a fifth of the local iterations). Max over blocks of each
# block's L1 residual.
LOCAL_TOLERANCE = 1e-2

# Called after each iteration with (phase, iteration, residual); phase is "local", "block" or "global".
OnPhaseIteration = Callable[[str, int, float], None]


@dataclass(frozen=True)
class BlockRankResult:
    ranks: np.ndarray  # the global PageRank, sums to 1
    local: np.ndarray  # each page's PageRank inside its block (sums to 1 per block)
    block_ranks: np.ndarray  # each block's rank in the block graph (sums to 1)
    start: np.ndarray  # local * block rank: the global phase's start vector
    blocks: int
    local_iterations: int
    block_iterations: int
    global_iterations: int
    residual: float
    converged: bool


@dataclass(frozen=True)
class LocalBlockRank:
    """Seed 003's rank: local rank x block rank, without the global phase."""

    ranks: np.ndarray  # local * block rank of each page, sums to 1
    local: np.ndarray
    block_ranks: np.ndarray
    blocks: int
    local_iterations: int
    block_iterations: int
    residual: float  # the block graph's last L1 residual
    converged: bool  # the block graph's PageRank converged (the local phase stops at local_tol or max_iter)


def blockrank_local(
    graph: Graph,
    block: np.ndarray,
    *,
    damping: float = DAMPING,
    tol: float = TOLERANCE,
    local_tol: float = LOCAL_TOLERANCE,
    max_iter: int = MAX_ITERATIONS,
    on_iteration: OnPhaseIteration | None = None,
) -> LocalBlockRank:
    """Steps 1-3 and the product of step 4: each page's local PageRank times its block's rank."""
    block = np.asarray(block, dtype=np.int64)
    if block.shape != (graph.n,):
        raise ValueError(f"block has shape {block.shape}, expected ({graph.n},)")
    if graph.n and block.min() < 0:
        raise ValueError("block numbers must be non-negative")
    nblocks = int(block.max()) + 1 if graph.n else 0

    def phase(name: str):
        return None if on_iteration is None else (lambda k, r: on_iteration(name, k, r))

    local, local_iterations = local_pageranks(
        graph, block, nblocks, damping=damping, tol=local_tol, max_iter=max_iter, on_iteration=phase("local")
    )
    bmatrix = block_matrix(graph, block, nblocks, local)
    # The surfer jumps to a page chosen uniformly, so it lands in a block in proportion to the
    # block's size: the block graph teleports (and spreads dangling mass) by size. Kamvar et al.
    # teleport uniformly over blocks, which over-ranks the many one-page hosts of a real crawl and
    # gave a start vector no better than uniform on our web-like graphs.
    size = np.bincount(block, minlength=nblocks).astype(np.float64)
    blocks = power_iterate(
        bmatrix, size, damping=damping, tol=tol, max_iter=max_iter, teleport=size, on_iteration=phase("block")
    )
    product = local * blocks.ranks[block] if graph.n else np.zeros(0)
    total = product.sum()
    return LocalBlockRank(
        ranks=product / total if total > 0 else product,
        local=local,
        block_ranks=blocks.ranks,
        blocks=nblocks,
        local_iterations=local_iterations,
        block_iterations=blocks.iterations,
        residual=blocks.residual,
        converged=blocks.converged,
    )


def blockrank(
    graph: Graph,
    block: np.ndarray,
    *,
    damping: float = DAMPING,
    tol: float = TOLERANCE,
    local_tol: float = LOCAL_TOLERANCE,
    max_iter: int = MAX_ITERATIONS,
    on_iteration: OnPhaseIteration | None = None,
) -> BlockRankResult:
    """BlockRank of `graph` with pages partitioned by `block` (block numbers 0..B-1, one per page): the
    global PageRank, started from seed 003's local x block rank."""
    first = blockrank_local(
        graph, block, damping=damping, tol=tol, local_tol=local_tol, max_iter=max_iter, on_iteration=on_iteration
    )
    start = first.ranks
    on_global = None if on_iteration is None else (lambda k, r: on_iteration("global", k, r))
    final = pagerank(graph, start=start, damping=damping, tol=tol, max_iter=max_iter, on_iteration=on_global)
    return BlockRankResult(
        ranks=final.ranks,
        local=first.local,
        block_ranks=first.block_ranks,
        start=start,
        blocks=first.blocks,
        local_iterations=first.local_iterations,
        block_iterations=first.block_iterations,
        global_iterations=final.iterations,
        residual=final.residual,
        converged=final.converged,
    )


def local_pageranks(
    graph: Graph,
    block: np.ndarray,
    nblocks: int,
    *,
    damping: float,
    tol: float,
    max_iter: int,
    on_iteration: Callable[[int, float], None] | None = None,
) -> tuple[np.ndarray, int]:
    """Every block's PageRank on its internal links, at once. Returns (ranks, iterations).

    A page whose links all leave its block is dangling here: its mass is spread over its block.
    """
    n = graph.n
    if n == 0:
        return np.zeros(0), 0
    inside = block[graph.src] == block[graph.dst]
    src, dst = graph.src[inside], graph.dst[inside]
    out_local = np.bincount(src, minlength=n)
    matrix = sp.csr_matrix((1.0 / out_local[src], (dst, src)), shape=(n, n), dtype=np.float64)
    size = np.maximum(np.bincount(block, minlength=nblocks), 1).astype(np.float64)
    x = 1.0 / size[block]
    iterations = 0
    for k in range(1, max_iter + 1):
        y = matrix @ x
        y *= damping
        kept = np.bincount(block, weights=y, minlength=nblocks)
        y += ((1.0 - kept) / size)[block]
        residual = float(np.bincount(block, weights=np.abs(y - x), minlength=nblocks).max())
        x, iterations = y, k
        if on_iteration is not None:
            on_iteration(k, residual)
        if residual < tol:
            break
    return x, iterations


def block_matrix(graph: Graph, block: np.ndarray, nblocks: int, local: np.ndarray) -> sp.csr_matrix:
    """The block graph's transposed transition matrix: [J, I] = sum of local(i) / outdeg(i) over links
    i -> j with i in I, j in J. A column sums to the share of its block's local rank on non-dangling
    pages; power_iterate spreads the rest uniformly, as PageRank does for dangling pages."""
    if graph.n == 0:
        return sp.csr_matrix((0, 0), dtype=np.float64)
    weight = local[graph.src] / graph.out_degree[graph.src]
    return sp.csr_matrix((weight, (block[graph.dst], block[graph.src])), shape=(nblocks, nblocks), dtype=np.float64)

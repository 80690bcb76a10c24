"""PageRank by power iteration over a scipy sparse matrix (pure: numpy and scipy only).

The model is networkx's (and Brin & Page's): with probability `damping` the surfer follows a link of
the page it is on, chosen uniformly; otherwise, and always from a dangling page (no out-links), it
jumps to a page chosen uniformly. Ranks sum to 1. Iteration stops when the L1 residual
||x_k+1 - x_k||_1 falls below `tol`; the distance to the true vector is then at most about
tol * damping / (1 - damping) in L1 (5.7 * tol at 0.85).

Duplicate edges count once (a DiGraph, as networkx builds it); a self-link is an ordinary edge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

DAMPING = 0.85
TOLERANCE = 1e-8
MAX_ITERATIONS = 500

# Called after each iteration with (iteration, L1 residual); for progress bars.
OnIteration = Callable[[int, float], None]


@dataclass(frozen=True)
class Graph:
    """A directed graph on pages 0..n-1, ready for power iteration.

    `matrix` is the transposed transition matrix: matrix[j, i] = 1/outdeg(i) for each link i -> j, so
    one step of the random surfer is `matrix @ x`. Columns of dangling pages are empty.
    """

    n: int
    src: np.ndarray  # int32, one per distinct edge
    dst: np.ndarray  # int32
    out_degree: np.ndarray  # int64 per page
    matrix: sp.csr_matrix

    @property
    def edges(self) -> int:
        return len(self.src)

    @property
    def dangling(self) -> int:
        return int(np.count_nonzero(self.out_degree == 0))


@dataclass(frozen=True)
class PowerResult:
    ranks: np.ndarray  # float64, sums to 1
    iterations: int
    residual: float  # L1 residual of the last iteration
    converged: bool


def dedupe_edges(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (src, dst) pairs, sorted by source."""
    if len(src) == 0:
        return np.asarray(src, dtype=np.int32), np.asarray(dst, dtype=np.int32)
    key = np.asarray(src, dtype=np.int64) * n + np.asarray(dst, dtype=np.int64)
    key.sort()  # sort + compare: numpy 2's hash-based np.unique is several times slower on 10M keys
    key = key[np.concatenate(([True], key[1:] != key[:-1]))]
    return (key // n).astype(np.int32), (key % n).astype(np.int32)


def build_graph(src, dst, n: int, *, unique: bool = False) -> Graph:
    """The graph of n pages with links src[k] -> dst[k] (page numbers 0..n-1).

    unique=True skips deduplication when the caller knows the pairs are distinct (the Link table's
    unique constraint), which saves a sort of every edge.
    """
    src = np.asarray(src, dtype=np.int32)
    dst = np.asarray(dst, dtype=np.int32)
    if src.shape != dst.shape:
        raise ValueError("src and dst must have the same length")
    if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge endpoints must lie in 0..{n - 1}")
    if not unique:
        src, dst = dedupe_edges(src, dst, n)
    out_degree = np.bincount(src, minlength=n).astype(np.int64)
    with np.errstate(divide="ignore"):
        inv_out = np.where(out_degree > 0, 1.0 / np.maximum(out_degree, 1), 0.0)
    matrix = sp.csr_matrix((inv_out[src], (dst, src)), shape=(n, n), dtype=np.float64)
    return Graph(n=n, src=src, dst=dst, out_degree=out_degree, matrix=matrix)


def power_iterate(
    matrix: sp.spmatrix,
    start: np.ndarray,
    *,
    damping: float = DAMPING,
    tol: float = TOLERANCE,
    max_iter: int = MAX_ITERATIONS,
    teleport: np.ndarray | None = None,
    on_iteration: OnIteration | None = None,
) -> PowerResult:
    """Iterate x <- damping * matrix @ x + leak * teleport until the L1 residual is below tol.

    `matrix` may leak mass (columns summing to less than 1: dangling pages, or a weighted block
    graph's unlinked share); whatever does not follow a link — the teleport (1 - damping) and the
    leak — is spread by `teleport` (uniform when None), which for pages is exactly networkx's
    treatment of dangling pages. Spreading "1 - sum" rather than computing the dangling mass
    separately also keeps the sum at 1 exactly against rounding drift.
    """
    n = matrix.shape[0]
    x = _normalised(start, n)
    if n == 0:
        return PowerResult(ranks=x, iterations=0, residual=0.0, converged=True)
    v = None if teleport is None else _normalised(teleport, n)
    residual = float("inf")
    for k in range(1, max_iter + 1):
        y = matrix @ x
        y *= damping
        if v is None:
            y += (1.0 - y.sum()) / n
        else:
            y += (1.0 - y.sum()) * v
        residual = float(np.abs(y - x).sum())
        x = y
        if on_iteration is not None:
            on_iteration(k, residual)
        if residual < tol:
            return PowerResult(ranks=x, iterations=k, residual=residual, converged=True)
    return PowerResult(ranks=x, iterations=max_iter, residual=residual, converged=False)


def pagerank(
    graph: Graph,
    *,
    start: np.ndarray | None = None,
    damping: float = DAMPING,
    tol: float = TOLERANCE,
    max_iter: int = MAX_ITERATIONS,
    on_iteration: OnIteration | None = None,
) -> PowerResult:
    """PageRank of every page, from `start` (uniform when None; any non-negative vector, normalised)."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping {damping}: must be in [0, 1)")
    if start is None:
        start = np.full(graph.n, 1.0 / graph.n) if graph.n else np.zeros(0)
    return power_iterate(
        graph.matrix, start, damping=damping, tol=tol, max_iter=max_iter, on_iteration=on_iteration
    )


def _normalised(x: np.ndarray, n: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (n,):
        raise ValueError(f"start vector has shape {x.shape}, expected ({n},)")
    if n == 0:
        return x.copy()
    if (x < 0).any() or not np.isfinite(x).all():
        raise ValueError("start vector must be finite and non-negative")
    total = x.sum()
    return x / total if total > 0 else np.full(n, 1.0 / n)

"""Ranking the crawl: read the link graph in bulk, convert, BlockRank, write ranks back.

Two methods (`METHODS`):
- `blockrank` (default): exact PageRank, started from the BlockRank estimate (fewer global iterations).
- `blockrank-local`: seed 003's own rank, local rank x block rank with no global iteration. The run also
  computes exact PageRank (uniform start) to record how far the estimate is from it (L1) and both times.

Pages whose content duplicates an earlier page are merged into it by the converting step (ranking.convert):
they get no rank row of their own.

One job, run by `manage.py rank` and by beat (`tasks.rank.rank_crawl`, queue housekeeping). It is
idempotent — a rerun rewrites the same rows — and single-run on PostgreSQL (an advisory lock: a
second run started while one works returns at once instead of doing the work twice).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db import estimates, locks, transactions

from .blockrank import blockrank, blockrank_local
from .convert import BLOCKS, convert
from .models import RankRun
from .pagerank import build_graph, pagerank
from .store import RankRows, graph_read, ranks_write

logger = logging.getLogger("ranking")

METHODS = ("blockrank", "blockrank-local")


class Progress(Protocol):
    """What the job reports as it goes; the command draws it with tqdm."""

    def stage(self, name: str, total: int | None = None) -> None: ...

    def advance(self, n: int = 1, **info: float) -> None: ...


class _Silent:
    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, n: int = 1, **info: float) -> None:
        pass


class RankAlreadyRunning(RuntimeError):
    pass


@dataclass(frozen=True)
class RankParams:
    block: str
    damping: float
    tolerance: float
    local_tolerance: float
    max_iterations: int

    @classmethod
    def from_settings(cls, *, block: str | None = None) -> RankParams:
        params = cls(
            block=block or settings.RANK_BLOCK,
            damping=settings.RANK_DAMPING,
            tolerance=settings.RANK_TOLERANCE,
            local_tolerance=settings.RANK_LOCAL_TOLERANCE,
            max_iterations=settings.RANK_MAX_ITERATIONS,
        )
        if params.block not in BLOCKS:
            raise ValueError(f"block {params.block!r}: expected one of {', '.join(BLOCKS)}")
        return params


def rank_crawl(
    *, block: str | None = None, method: str = "blockrank", compare: bool = False, progress: Progress | None = None
) -> RankRun:
    """Rank every known URL over the Link graph by `method` and store the ranks. Returns the run's record.

    compare=True also runs PageRank from a uniform start: the iterations BlockRank saved, and the L1
    distance and time beside exact PageRank (always done for blockrank-local, whose ranks are not exact).
    Raises RankAlreadyRunning when another run holds the lock (PostgreSQL).
    """
    if method not in METHODS:
        raise ValueError(f"method {method!r}: expected one of {', '.join(METHODS)}")
    params = RankParams.from_settings(block=block)
    progress = progress or _Silent()
    with _single_run():
        t0 = time.perf_counter()
        raw = _read(progress)
        t_read = time.perf_counter()
        progress.stage("convert")
        converted = convert(
            raw.sites, raw.url_ids, raw.url_server, raw.link_from, raw.link_to, duplicates=raw.duplicates
        )
        del raw
        # The Link table's unique constraint makes the pairs distinct (and convert dedupes what the merge of
        # duplicate pages joins): no dedup sort needed.
        graph = build_graph(converted.src, converted.dst, converted.pages, unique=True)
        t1 = time.perf_counter()
        ranked = _rank(graph, converted, params, method, compare or method == "blockrank-local", progress)
        t2 = time.perf_counter()
        progress.stage("write ranks", total=converted.pages)
        rows = RankRows(
            converted=converted, rank=ranked.ranks, local_rank=ranked.local,
            block_rank=ranked.block_ranks[converted.blocks(params.block)],
        )
        with transaction.atomic():
            finished = timezone.now()
            ranks_write(rows, computed_at=finished, advance=progress.advance)
            t3 = time.perf_counter()
            run = RankRun.objects.create(
                finished_at=finished,
                block=params.block,
                method=method,
                pages=converted.pages,
                duplicates=len(converted.merged_urls),
                links=graph.edges,
                dangling=graph.dangling,
                sites=len(converted.site_servers),
                domains=len(converted.domains),
                communities=len(converted.communities),
                blocks=ranked.blocks,
                damping=params.damping,
                tolerance=params.tolerance,
                local_iterations=ranked.local_iterations,
                block_iterations=ranked.block_iterations,
                global_iterations=ranked.global_iterations,
                uniform_iterations=ranked.exact.iterations if ranked.exact else None,
                converged=ranked.converged,
                residual=ranked.residual,
                l1_to_exact=ranked.l1_to_exact,
                exact_seconds=ranked.exact_seconds,
                read_seconds=round(t_read - t0, 3),
                convert_seconds=round(t1 - t_read, 3),
                rank_seconds=ranked.seconds,
                write_seconds=round(t3 - t2, 3),
            )
    return run


@dataclass(frozen=True)
class _Ranked:
    ranks: np.ndarray
    local: np.ndarray
    block_ranks: np.ndarray
    blocks: int
    local_iterations: int
    block_iterations: int
    global_iterations: int
    converged: bool
    residual: float
    seconds: float  # the method's own time (not the comparison's)
    exact: object | None = None  # the uniform-start PageRank (pagerank.PowerResult), when compared
    exact_seconds: float | None = None
    l1_to_exact: float | None = None


def _rank(graph, converted, params: RankParams, method: str, compare: bool, progress: Progress) -> _Ranked:
    stage = {"name": None}

    def on_iteration(phase: str, k: int, residual: float) -> None:
        if stage["name"] != phase:
            stage["name"] = phase
            progress.stage(f"{phase} PageRank", total=params.max_iterations)
        progress.advance(1, residual=residual)

    kwargs = dict(damping=params.damping, tol=params.tolerance, max_iter=params.max_iterations)
    blocks = converted.blocks(params.block)
    started = time.perf_counter()
    if method == "blockrank-local":
        # The product is the answer here, not a start vector: local ranks iterate to the run's tolerance.
        local = blockrank_local(graph, blocks, local_tol=params.tolerance, on_iteration=on_iteration, **kwargs)
        result = dict(
            ranks=local.ranks, local=local.local, block_ranks=local.block_ranks, blocks=local.blocks,
            local_iterations=local.local_iterations, block_iterations=local.block_iterations, global_iterations=0,
            converged=local.converged, residual=local.residual,
        )
    else:
        full = blockrank(graph, blocks, local_tol=params.local_tolerance, on_iteration=on_iteration, **kwargs)
        result = dict(
            ranks=full.ranks, local=full.local, block_ranks=full.block_ranks, blocks=full.blocks,
            local_iterations=full.local_iterations, block_iterations=full.block_iterations,
            global_iterations=full.global_iterations, converged=full.converged, residual=full.residual,
        )
    seconds = round(time.perf_counter() - started, 3)
    if not result["converged"]:
        logger.warning(
            "ranking did not converge in %d iterations (L1 residual %.3g > %.3g)",
            params.max_iterations, result["residual"], params.tolerance,
        )
    if not compare:
        return _Ranked(**result, seconds=seconds)
    progress.stage("uniform-start PageRank (comparison)", total=params.max_iterations)
    started = time.perf_counter()
    exact = pagerank(graph, on_iteration=lambda k, r: progress.advance(1, residual=r), **kwargs)
    return _Ranked(
        **result, seconds=seconds, exact=exact, exact_seconds=round(time.perf_counter() - started, 3),
        l1_to_exact=float(np.abs(result["ranks"] - exact.ranks).sum()),
    )


def run_summary(run: RankRun) -> dict:
    """The run as plain data (the command's --json, the task's result)."""
    return {
        "block": run.block,
        "method": run.method,
        "pages": run.pages,
        "duplicates_merged": run.duplicates,
        "links": run.links,
        "dangling": run.dangling,
        "sites": run.sites,
        "domains": run.domains,
        "communities": run.communities,
        "blocks": run.blocks,
        "damping": run.damping,
        "tolerance": run.tolerance,
        "iterations": {
            "local": run.local_iterations,
            "block": run.block_iterations,
            "global": run.global_iterations,
            "uniform_start": run.uniform_iterations,
            "saved": run.iterations_saved,
        },
        "converged": run.converged,
        "residual": run.residual,
        "exact_pagerank": None if run.exact_seconds is None else {
            "l1_distance": run.l1_to_exact, "seconds": run.exact_seconds, "iterations": run.uniform_iterations,
            "method_seconds": run.rank_seconds,
        },
        "seconds": {
            "read": run.read_seconds,
            "convert": run.convert_seconds,
            "rank": run.rank_seconds,
            "write": run.write_seconds,
            "total": round(run.read_seconds + run.convert_seconds + run.rank_seconds + run.write_seconds, 3),
        },
        "finished_at": run.finished_at.isoformat(),
    }


def _read(progress: Progress):
    from crawlcore.models import Link, Url

    progress.stage("read URLs and links", total=estimates.table_rows(Url) + estimates.table_rows(Link))
    # Servers, URLs and links from one snapshot: no link to a URL inserted between the reads.
    with transactions.read_snapshot():
        return graph_read(on_table=lambda _name, rows: progress.advance(rows))


@contextmanager
def _single_run():
    """One run at a time, cluster-wide (a session advisory lock: a killed process releases it)."""
    with locks.advisory_lock("rank") as taken:
        if not taken:
            raise RankAlreadyRunning("another ranking run is in progress")
        yield

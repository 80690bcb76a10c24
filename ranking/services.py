"""Ranking the crawl (DESIGN.md §8): read the link graph in bulk, convert, BlockRank, write ranks back.

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

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from crawlcore.db import estimates, locks, transactions

from .blockrank import blockrank
from .convert import BLOCKS, convert
from .models import RankRun
from .pagerank import build_graph, pagerank
from .store import RankRows, graph_read, ranks_write

logger = logging.getLogger("ranking")


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


def rank_crawl(*, block: str | None = None, compare: bool = False, progress: Progress | None = None) -> RankRun:
    """Rank every known URL by BlockRank over the Link graph and store the ranks. Returns the run's record.

    compare=True also runs PageRank from a uniform start, to record the iterations BlockRank saved.
    Raises RankAlreadyRunning when another run holds the lock (PostgreSQL).
    """
    params = RankParams.from_settings(block=block)
    progress = progress or _Silent()
    with _single_run():
        t0 = time.perf_counter()
        raw = _read(progress)
        progress.stage("convert")
        converted = convert(raw.sites, raw.url_ids, raw.url_server, raw.link_from, raw.link_to)
        del raw
        t1 = time.perf_counter()
        # The Link table's unique constraint makes the pairs distinct: no dedup sort needed.
        graph = build_graph(converted.src, converted.dst, converted.pages, unique=True)
        stage = {"name": None}

        def on_iteration(phase: str, k: int, residual: float) -> None:
            if stage["name"] != phase:
                stage["name"] = phase
                progress.stage(f"{phase} PageRank", total=params.max_iterations)
            progress.advance(1, residual=residual)

        kwargs = dict(damping=params.damping, tol=params.tolerance, max_iter=params.max_iterations)
        result = blockrank(
            graph, converted.blocks(params.block), local_tol=params.local_tolerance, on_iteration=on_iteration,
            **kwargs,
        )
        uniform = None
        if compare:
            progress.stage("uniform-start PageRank (comparison)", total=params.max_iterations)
            uniform = pagerank(graph, on_iteration=lambda k, r: progress.advance(1, residual=r), **kwargs)
        if not result.converged:
            logger.warning(
                "ranking did not converge in %d iterations (L1 residual %.3g > %.3g)",
                params.max_iterations, result.residual, params.tolerance,
            )
        t2 = time.perf_counter()
        progress.stage("write ranks", total=converted.pages)
        rows = RankRows(
            converted=converted,
            rank=result.ranks,
            local_rank=result.local,
            block_rank=result.block_ranks[converted.blocks(params.block)],
        )
        with transaction.atomic():
            finished = timezone.now()
            ranks_write(rows, computed_at=finished, advance=progress.advance)
            t3 = time.perf_counter()
            run = RankRun.objects.create(
                finished_at=finished,
                block=params.block,
                pages=converted.pages,
                links=graph.edges,
                dangling=graph.dangling,
                sites=len(converted.site_servers),
                domains=len(converted.domains),
                communities=len(converted.communities),
                blocks=result.blocks,
                damping=params.damping,
                tolerance=params.tolerance,
                local_iterations=result.local_iterations,
                block_iterations=result.block_iterations,
                global_iterations=result.global_iterations,
                uniform_iterations=uniform.iterations if uniform else None,
                converged=result.converged,
                residual=result.residual,
                read_seconds=round(t1 - t0, 3),
                rank_seconds=round(t2 - t1, 3),
                write_seconds=round(t3 - t2, 3),
            )
    return run


def run_summary(run: RankRun) -> dict:
    """The run as plain data (the command's --json, the task's result)."""
    return {
        "block": run.block,
        "pages": run.pages,
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
        "seconds": {
            "read": run.read_seconds,
            "rank": run.rank_seconds,
            "write": run.write_seconds,
            "total": round(run.read_seconds + run.rank_seconds + run.write_seconds, 3),
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

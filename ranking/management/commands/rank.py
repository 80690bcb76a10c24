"""`python manage.py rank [--block site|domain|community] [--method blockrank|blockrank-local] [--json] [--compare]`:
rank the crawl's link graph and store every page's rank (the beat job `tasks.rank.rank_crawl` does the same).

--method blockrank (default) stores exact PageRank, started from the BlockRank estimate; --method
blockrank-local stores seed 003's rank (local rank x block rank, no global iteration) and prints its L1
distance to exact PageRank and both methods' times.

`python manage.py rank --edges edges.csv --out ranks.csv`: rank any graph given as a CSV of `src,dst`
(URLs or integer IDs), without touching the database; writes `node,rank`, highest first.
"""

from __future__ import annotations

import json
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from crawlcore.schema import SchemaOutdated, schema_ensure
from ranking.convert import BLOCKS
from ranking.edges import EdgeFileError, edge_file_rank
from ranking.services import METHODS, RankAlreadyRunning, rank_crawl, run_summary


class TqdmProgress:
    """services.Progress drawn as one tqdm bar per stage, on stderr."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar: tqdm | None = None

    def stage(self, name: str, total: int | None = None) -> None:
        self.close()
        if self.enabled:
            self.bar = tqdm(total=total, desc=name, file=sys.stderr, dynamic_ncols=True, leave=False)

    def advance(self, n: int = 1, **info: float) -> None:
        if self.bar is not None:
            self.bar.update(n)
            if "residual" in info:
                self.bar.set_postfix(residual=f"{info['residual']:.2e}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class Command(BaseCommand):
    help = "Rank the crawl's pages by BlockRank (or any CSV edge list with --edges/--out)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--block", choices=BLOCKS, default=None, help="BlockRank blocks (default: RANK_BLOCK)")
        parser.add_argument(
            "--method", choices=METHODS, default="blockrank",
            help="blockrank: exact PageRank started from BlockRank (default); blockrank-local: local x block rank",
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON")
        parser.add_argument(
            "--compare", action="store_true", help="Also run PageRank from a uniform start and report iterations saved"
        )
        parser.add_argument("--edges", help="Rank this CSV edge list (src,dst) instead of the crawl")
        parser.add_argument("--out", help="With --edges: where to write node,rank (default: stdout)")
        parser.add_argument("--tol", type=float, default=None, help="With --edges: L1 residual threshold")
        parser.add_argument("--damping", type=float, default=None, help="With --edges: damping factor")
        parser.add_argument("--no-progress", action="store_true", help="No progress bars")

    def handle(self, *args, **opts) -> None:
        progress = TqdmProgress(enabled=not opts["no_progress"] and not opts["json"] and sys.stderr.isatty())
        try:
            if opts["edges"]:
                summary = self._rank_file(opts, progress)
            else:
                if opts["out"] or opts["tol"] is not None or opts["damping"] is not None:
                    raise CommandError("--out, --tol and --damping go with --edges (the crawl uses RANK_* settings)")
                self._ensure_schema()
                try:
                    run = rank_crawl(
                        block=opts["block"], method=opts["method"], compare=opts["compare"], progress=progress
                    )
                except RankAlreadyRunning as exc:
                    raise CommandError(str(exc)) from None
                summary = run_summary(run)
        finally:
            progress.close()
        self._print(summary, as_json=opts["json"])

    def _rank_file(self, opts, progress: TqdmProgress) -> dict:
        tol = settings.RANK_TOLERANCE if opts["tol"] is None else opts["tol"]
        damping = settings.RANK_DAMPING if opts["damping"] is None else opts["damping"]
        if not 0 <= damping < 1 or tol <= 0:
            raise CommandError("--damping must be in [0, 1) and --tol positive")

        def on_iteration(phase: str, k: int, residual: float) -> None:
            if k == 1:
                progress.stage(f"{phase} PageRank", total=settings.RANK_MAX_ITERATIONS)
            progress.advance(1, residual=residual)

        try:
            summary = edge_file_rank(
                opts["edges"],
                opts["out"] or self.stdout,
                block=opts["block"] or settings.RANK_BLOCK,
                damping=damping,
                tol=tol,
                max_iter=settings.RANK_MAX_ITERATIONS,
                local_tol=settings.RANK_LOCAL_TOLERANCE,
                method=opts["method"],
                on_iteration=on_iteration,
            )
        except (OSError, EdgeFileError, UnicodeDecodeError) as exc:
            raise CommandError(f"{opts['edges']}: {exc}") from None
        return {**summary, "out": opts["out"]}

    def _print(self, summary: dict, *, as_json: bool) -> None:
        # With --edges and no --out the ranks went to stdout: the summary goes to stderr then.
        stream = self.stderr if summary.get("out", "") is None else self.stdout
        if as_json:
            stream.write(json.dumps(summary, indent=2))
            return
        its = summary["iterations"]
        lines = [f"ranked {summary.get('pages', summary.get('nodes'))} pages, {summary['links']} links"]
        if summary.get("duplicates_merged"):
            lines.append(f"{summary['duplicates_merged']} duplicate pages merged into the page they copy")
        if summary.get("block"):
            lines.append(f"blocks by {summary['block']}, method {summary.get('method', 'blockrank')}")
        lines.append("iterations: " + ", ".join(f"{k} {v}" for k, v in its.items() if v is not None))
        if not summary["converged"]:
            lines.append(f"NOT converged (residual {summary['residual']:.3g})")
        seconds = summary["seconds"]
        if isinstance(seconds, dict):
            lines.append("seconds: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
        else:
            lines.append(f"seconds: {seconds}")
        exact = summary.get("exact_pagerank")
        if exact:
            lines.append(
                f"{summary.get('method', 'blockrank')}: {exact['method_seconds']} s;"
                f" exact PageRank (uniform start): {exact['seconds']} s, {exact['iterations']} iterations;"
                f" L1 distance to exact PageRank: {exact['l1_distance']:.3g}"
            )
        stream.write("\n".join(lines))

    def _ensure_schema(self) -> None:
        try:
            schema_ensure()
        except SchemaOutdated as exc:
            raise CommandError(str(exc)) from None

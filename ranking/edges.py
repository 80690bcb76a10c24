"""Any graph as a CSV edge list, for `manage.py rank --edges` (pure).

Input: one link per line, `src,dst`, naming nodes by URL or by integer ID. A line with a single
value declares a node with no links of its own; blank lines and lines starting with `#` are
skipped, and so is a first line that is a header (`src,dst`, `source,target`, `from,to`).
If every node is an integer, nodes are numbers (and printed as such); otherwise all are strings.
Output: `node,rank`, highest rank first.

`edge_file_rank` is the whole job: read, rank (BlockRank by site or domain when the nodes are URLs,
plain PageRank for integer IDs), write, and summarise.
"""

from __future__ import annotations

import csv
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

import numpy as np

from crawler.scope import registered_domain

from .blockrank import blockrank, blockrank_local
from .pagerank import build_graph, pagerank

HEADERS = {("src", "dst"), ("source", "target"), ("from", "to"), ("node",)}
_INT = re.compile(r"[+-]?\d+\Z")


@dataclass(frozen=True)
class EdgeList:
    nodes: list  # node index -> label (int or str)
    src: np.ndarray  # int32 node indices
    dst: np.ndarray


class EdgeFileError(ValueError):
    pass


def read_edges(source: str | Path | TextIO) -> EdgeList:
    if isinstance(source, str | Path):
        with open(source, newline="", encoding="utf-8") as fh:
            return read_edges(fh)
    pairs: list[tuple[str, str]] = []
    singles: list[str] = []
    for lineno, row in enumerate(csv.reader(source), start=1):
        row = [cell.strip() for cell in row]
        if not row or not any(row) or row[0].startswith("#"):
            continue
        if lineno == 1 and tuple(c.lower() for c in row) in HEADERS:
            continue
        if len(row) == 1 or (len(row) == 2 and row[1] == ""):
            singles.append(row[0])
        elif len(row) == 2 and row[0] and row[1]:
            pairs.append((row[0], row[1]))
        else:
            raise EdgeFileError(f"line {lineno}: expected `src,dst`, got {len(row)} fields")
    labels = [a for a, _ in pairs] + [b for _, b in pairs] + singles
    numeric = bool(labels) and all(_INT.match(label) for label in labels)
    index: dict = {}
    for label in labels:
        index.setdefault(int(label) if numeric else label, len(index))
    if numeric:
        nodes = sorted(index)
        index = {label: i for i, label in enumerate(nodes)}
    else:
        nodes = list(index)
    key = int if numeric else str
    src = np.fromiter((index[key(a)] for a, _ in pairs), dtype=np.int32, count=len(pairs))
    dst = np.fromiter((index[key(b)] for _, b in pairs), dtype=np.int32, count=len(pairs))
    return EdgeList(nodes=nodes, src=src, dst=dst)


def write_ranks(target: str | Path | TextIO, nodes: list, ranks: np.ndarray) -> None:
    if isinstance(target, str | Path):
        with open(target, "w", newline="", encoding="utf-8") as fh:
            return write_ranks(fh, nodes, ranks)
    writer = csv.writer(target, lineterminator="\n")
    writer.writerow(("node", "rank"))
    # Highest rank first; ties in input order (a stable sort on the negated rank).
    for i in np.argsort(-ranks, kind="stable").tolist():
        writer.writerow((nodes[i], f"{ranks[i]:.17g}"))
    return None


def url_blocks(nodes: list, kind: str) -> np.ndarray | None:
    """Blocks for a CSV of URLs: by origin (site), registered domain, or — with no server groups in a
    file — domain again for community. None when the nodes are not URLs."""
    if not nodes or not isinstance(nodes[0], str):
        return None
    keys = []
    for node in nodes:
        parts = urlsplit(node)
        if not parts.scheme or not parts.hostname:
            return None
        keys.append(f"{parts.scheme}://{parts.netloc.lower()}" if kind == "site" else registered_domain(parts.hostname))
    _, blocks = np.unique(np.array(keys, dtype=object), return_inverse=True)
    return blocks


def edge_file_rank(
    source: str | Path | TextIO,
    target: str | Path | TextIO,
    *,
    block: str,
    damping: float,
    tol: float,
    max_iter: int,
    local_tol: float,
    method: str = "blockrank",
    on_iteration: Callable[[str, int, float], None] | None = None,
) -> dict:
    """Rank the graph of edge file `source`, write `node,rank` to `target`, and return the summary.

    Raises OSError, UnicodeDecodeError or EdgeFileError when the file cannot be read as an edge list.
    `on_iteration(phase, k, residual)` is called after each power iteration (phase: local, block, global).
    method "blockrank-local" writes seed 003's local x block rank (URL nodes only) and adds its L1 distance to
    exact PageRank and both times to the summary.
    """
    started = time.perf_counter()
    edges = read_edges(source)
    graph = build_graph(edges.src, edges.dst, len(edges.nodes))
    kwargs = dict(damping=damping, tol=tol, max_iter=max_iter)
    blocks = url_blocks(edges.nodes, block)
    report = on_iteration or (lambda phase, k, residual: None)
    exact = None
    if method == "blockrank-local" and blocks is not None:
        t = time.perf_counter()
        result = blockrank_local(graph, blocks, local_tol=tol, on_iteration=report, **kwargs)
        method_seconds = round(time.perf_counter() - t, 3)
        iterations = {"local": result.local_iterations, "block": result.block_iterations}
        t = time.perf_counter()
        uniform = pagerank(graph, on_iteration=lambda k, r: report("global", k, r), **kwargs)
        exact = {
            "l1_distance": float(np.abs(result.ranks - uniform.ranks).sum()),
            "seconds": round(time.perf_counter() - t, 3), "iterations": uniform.iterations,
            "method_seconds": method_seconds,
        }
    elif blocks is None:  # integer IDs: no host structure to block by
        result = pagerank(graph, on_iteration=lambda k, r: report("global", k, r), **kwargs)
        iterations = {"global": result.iterations}
    else:
        result = blockrank(graph, blocks, local_tol=local_tol, on_iteration=report, **kwargs)
        iterations = {
            "local": result.local_iterations, "block": result.block_iterations, "global": result.global_iterations
        }
    write_ranks(target, edges.nodes, result.ranks)
    return {
        "nodes": graph.n,
        "links": graph.edges,
        "dangling": graph.dangling,
        "block": None if blocks is None else block,
        "method": method if blocks is not None else "pagerank",
        "exact_pagerank": exact,
        "damping": damping,
        "tolerance": tol,
        "iterations": iterations,
        "converged": result.converged,
        "residual": result.residual,
        "seconds": round(time.perf_counter() - started, 3),
    }

"""The throughput benchmark's web: a deterministic (seeded) set of static sites to crawl.

`servers` sites on loopback addresses (127.0.1.1, 127.0.1.2 … by default), one port, each with `pages`
public HTML pages of ~`page_bytes` bytes: the home page `/` and `/p/<k>.html` for k = 1 … pages-1. Every
page carries exactly `links` distinct links, `onsite` of them to its own site and the rest to random pages
of other sites. Every page is reachable from its site's home page within a few links: page k links to
its `BRANCH` children k·BRANCH+1 … (a tree of depth log_BRANCH(pages)), the other on-site links are
random. Each site also has `private` pages under `/private/`, linked from one page in `PRIVATE_EVERY`,
which its robots.txt disallows for every user agent: a crawler that obeys robots.txt never requests
them, and the access log shows it.

The same spec (seed, hosts, port) always gives the same bytes, so two crawlers see the same web and a
generated web can be kept and served again (`manifest.json` records the spec).

    python -m testweb.generated DIR [--servers 20] [--pages 2500] [--port 8089]     # write it, print figures
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import deque
from dataclasses import asdict, dataclass
from html import escape
from pathlib import Path

from testweb.nginx import OwnNginx, accepting, find_nginx

__all__ = ["ROBOTS_TXT", "NginxWeb", "Web", "WebSpec", "ensure_written", "find_nginx", "port_is_free"]

BRANCH = 8  # tree children per page: pages 1..2499 lie within 4 links of the home page
PRIVATE_EVERY = 50  # one page in 50 links a /private/ page (robots.txt disallows /private/)
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"
_WORDS = (
    "crawler server page link robots index frontier queue worker status check latency archive network "
    "protocol request response header body title description language domain host address politeness "
    "delay timeout schedule rank block graph vertex edge damping residual matrix sparse vector sample "
    "profile hour load agent extract parse token anchor document content type charset encoding mirror "
    "site section article paper seed table figure result method system design analysis report survey"
).split()
_MEAN_WORD = sum(len(w) + 1 for w in _WORDS) / len(_WORDS)  # with its space


@dataclass(frozen=True)
class WebSpec:
    servers: int = 20
    pages: int = 2500  # public pages per server, home page included
    links: int = 30  # links per page
    onsite: float = 0.8  # share of a page's links that stay on its site
    page_bytes: int = 10_000  # approximate size of a page
    private: int = 5  # robots-disallowed pages per server
    seed: int = 9
    net: str = "127.0.1"  # hosts are <net>.1 … <net>.<servers>
    port: int = 8089

    def __post_init__(self) -> None:
        if not 1 <= self.servers <= 254:
            raise ValueError(f"servers = {self.servers}: expected 1 … 254 (one loopback address each)")
        onsite = round(self.links * self.onsite)
        if self.pages < 2 or onsite >= self.pages - 1 or (self.servers > 1 and self.links - onsite > self.pages):
            raise ValueError(f"{self.pages} pages per server cannot hold {self.links} distinct links per page")
        if onsite < BRANCH + 1:
            raise ValueError(f"{onsite} on-site links per page: at least {BRANCH + 1} needed (the tree and /private/)")
        if self.servers == 1 and onsite != self.links:
            raise ValueError("one server has no other site to link to: use --onsite 1")


class Web:
    """The pure model: which links each page has, what it looks like, and what a crawl must find."""

    def __init__(self, spec: WebSpec):
        self.spec = spec
        self.hosts = [f"{spec.net}.{i}" for i in range(1, spec.servers + 1)]
        self.n_onsite = round(spec.links * spec.onsite)

    # -- addresses ----------------------------------------------------------------------------------
    def origin(self, s: int) -> str:
        return f"http://{self.hosts[s]}:{self.spec.port}"

    def seeds(self) -> list[str]:
        return [self.origin(s) + "/" for s in range(self.spec.servers)]

    @staticmethod
    def path(k: int) -> str:
        return "/" if k == 0 else f"/p/{k}.html"

    @staticmethod
    def private_path(j: int) -> str:
        return f"/private/{j}.html"

    def url(self, s: int, k: int) -> str:
        return self.origin(s) + self.path(k)

    # -- structure ----------------------------------------------------------------------------------
    def targets(self, s: int, k: int) -> list[tuple[int, str]]:
        """The page's links as (server, path), distinct, never to itself: on-site first, then off-site."""
        spec = self.spec
        rng = random.Random(f"{spec.seed}/links/{s}/{k}")
        onsite = [c for c in range(k * BRANCH + 1, k * BRANCH + BRANCH + 1) if c < spec.pages]
        paths = [self.path(c) for c in onsite]
        if spec.private and k % PRIVATE_EVERY == 0:
            paths.append(self.private_path((k // PRIVATE_EVERY) % spec.private))
        chosen = set(onsite) | {k}
        while len(paths) < self.n_onsite:
            c = rng.randrange(spec.pages)
            if c not in chosen:
                chosen.add(c)
                paths.append(self.path(c))
        out = [(s, p) for p in paths]
        offsite: set[tuple[int, int]] = set()
        while len(out) < spec.links:
            other = rng.randrange(spec.servers - 1)
            other += other >= s  # any server but this one
            c = rng.randrange(spec.pages)
            if (other, c) not in offsite:
                offsite.add((other, c))
                out.append((other, self.path(c)))
        return out

    def render(self, s: int, k: int) -> bytes:
        """The page's HTML: a title, paragraphs of filler text with the links spread among them."""
        spec = self.spec
        rng = random.Random(f"{spec.seed}/text/{s}/{k}")
        title = f"Page {k} of site {s + 1}: {' '.join(rng.choices(_WORDS, k=3))}"
        anchors = []
        for t, p in self.targets(s, k):
            href = p if t == s else self.origin(t) + p
            anchors.append(f'<a href="{escape(href)}">{" ".join(rng.choices(_WORDS, k=2))}</a>')
        head = (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>\n'
            f'<meta name="description" content="Benchmark page {k} of site {s + 1}"></head>\n<body>\n'
            f"<h1>{escape(title)}</h1>\n"
        )
        parts = [head]
        size = len(head) + sum(len(a) for a in anchors) + 40
        per_paragraph = 3
        paragraphs = max(1, -(-len(anchors) // per_paragraph))
        text_budget = max(0, spec.page_bytes - size)
        words_per_paragraph = max(1, round(text_budget / paragraphs / _MEAN_WORD))
        for i in range(paragraphs):
            words = rng.choices(_WORDS, k=words_per_paragraph)
            links = " ".join(anchors[i * per_paragraph : (i + 1) * per_paragraph])
            parts.append(f"<p>{' '.join(words)} {links}</p>\n")
        parts.append("</body></html>\n")
        return "".join(parts).encode()

    # -- what a crawl must find ---------------------------------------------------------------------
    def expected(self) -> dict:
        """What a complete crawl that obeys robots.txt finds, from the home pages.

        pages: public pages (all reachable; each fetched once); excluded: robots-disallowed URLs that are
        linked (known, never fetched); links: distinct (page, target) pairs over the public pages;
        robots: one robots.txt per server.
        """
        linked_private = {
            (s, self.private_path((k // PRIVATE_EVERY) % self.spec.private))
            for s in range(self.spec.servers)
            for k in range(0, self.spec.pages, PRIVATE_EVERY)
            if self.spec.private
        }
        return {
            "pages": self.spec.servers * self.spec.pages,
            "excluded": len(linked_private),
            "links": self.spec.servers * self.spec.pages * self.spec.links,
            "robots": self.spec.servers,
        }

    def reachable(self) -> set[tuple[int, str]]:
        """Breadth-first from every home page, not entering /private/: the (server, path) pairs found."""
        seen = {(s, "/") for s in range(self.spec.servers)}
        queue = deque(seen)
        index = {self.path(k): k for k in range(self.spec.pages)}
        while queue:
            s, p = queue.popleft()
            for t in self.targets(s, index[p]):
                if t not in seen:
                    seen.add(t)
                    if not t[1].startswith("/private/"):
                        queue.append(t)
        return seen

    # -- files --------------------------------------------------------------------------------------
    def write(self, root: Path) -> dict:
        """Write every site under root/<host>/ (index.html, p/<k>.html, private/<j>.html, robots.txt) and
        root/manifest.json. Returns figures: files, bytes, seconds."""
        t0 = time.perf_counter()
        files = total = 0
        for s, host in enumerate(self.hosts):
            site = root / host
            (site / "p").mkdir(parents=True, exist_ok=True)
            (site / "private").mkdir(exist_ok=True)
            (site / "robots.txt").write_text(ROBOTS_TXT)
            for k in range(self.spec.pages):
                body = self.render(s, k)
                (site / ("index.html" if k == 0 else f"p/{k}.html")).write_bytes(body)
                files += 1
                total += len(body)
            for j in range(self.spec.private):
                (site / "private" / f"{j}.html").write_text(f"<html><title>private {j}</title>secret</html>\n")
        (root / "manifest.json").write_text(json.dumps(asdict(self.spec), indent=2, sort_keys=True))
        return {"files": files, "bytes": total, "seconds": round(time.perf_counter() - t0, 1)}


def ensure_written(root: Path, spec: WebSpec) -> dict | None:
    """Write the web under `root` unless the same spec is already there. None when it was reused."""
    manifest = root / "manifest.json"
    if manifest.exists():
        try:
            if json.loads(manifest.read_text()) == asdict(spec):
                return None
        except ValueError:
            pass
        raise SystemExit(f"{root} holds another web (manifest.json differs): choose an empty directory")
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty and has no manifest.json: choose an empty directory")
    root.mkdir(parents=True, exist_ok=True)
    return Web(spec).write(root)


def _readable_by_all(path: Path) -> None:
    """nginx workers run as nobody when the master is root: they must reach the files (mkdtemp is 0700)."""
    for p in [path, *path.parents]:
        try:
            if p.stat().st_mode & 0o005 != 0o005 and p.stat().st_uid == os.getuid():
                os.chmod(p, p.stat().st_mode | 0o005)
        except OSError:
            pass


class NginxWeb(OwnNginx):
    """Our own nginx (testweb.nginx) serving a written web on every host of `spec`, one port."""

    def __init__(self, www: Path, spec: WebSpec, run_dir: Path, *, workers: int = 1):
        super().__init__(run_dir, Web(spec).hosts, spec.port, workers=workers)
        self.www, self.spec = www, spec

    def prepare(self) -> None:
        _readable_by_all(self.www)

    def http_lines(self) -> str:
        return (
            "    sendfile on;\n    tcp_nopush on;\n"
            "    open_file_cache max=8000 inactive=60s;  # cached descriptors count against worker_rlimit_nofile"
        )

    def server_lines(self) -> str:
        return f"        root {self.www.resolve()}/$server_addr;\n        index index.html;"


def port_is_free(spec: WebSpec) -> bool:
    """Nobody listens on the spec's port on any of its hosts."""
    return not any(accepting(h, spec.port) for h in Web(spec).hosts)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Write the throughput benchmark's web to DIR.")
    ap.add_argument("dir", type=Path)
    for name, default in asdict(WebSpec()).items():
        ap.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    args = vars(ap.parse_args(argv))
    root = args.pop("dir")
    spec = WebSpec(**args)
    figures = ensure_written(root, spec)
    print(json.dumps({"spec": asdict(spec), "written": figures, **Web(spec).expected()}, indent=2))
    os.chmod(root, 0o755)


if __name__ == "__main__":
    main()

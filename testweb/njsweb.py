"""The long crawl's web: pages computed from their URL by nginx's JavaScript module (njs), no file per page.

`servers` sites on loopback addresses (127.0.1.1 … by default), one port, each with `pages` HTML pages: the
home page `/` and `/p/<k>` for k = 1 … pages-1, 4–15 KB each (10 KB on average), in one of four languages. Every page k
links to its tree children k·8+1 … k·8+8 (so each page lies within log₈(pages) links of its home page),
then to random pages of its own site up to `onsite` links and random pages of other sites up to `links`.
A share of pages carries one more link each:

- k % 33 == 5: `/gone/<k>`, a 404 (3 % of pages);
- k % 50 == 7: `/moved/<k>`, a 301 to another page of the site (2 %);
- k % 50 == 0: `/private/<(k/50) % 5>`, which robots.txt disallows (never fetched by a polite crawler).

So a complete crawl from the home pages is finite and known in advance (`NjsWebSpec.expected`): every
page, 404 and redirect fetched once, robots.txt and sitemap.xml once per server, nothing else.

testweb/njsweb.js generates the pages; `Twin` below is its Python twin for the links, statuses and
redirect targets (not the filler text), which tests/test_njs_web.py holds against what nginx serves.

    python -m testweb.njsweb [--servers 20] [--pages 2500] [--port 8097]    # serve until Ctrl-C
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from testweb.nginx import OwnNginx, accepting

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "njsweb.js"
NJS_MODULE = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"

# Kept equal to the constants at the top of testweb/njsweb.js.
BRANCH = 8
GONE_EVERY, GONE_AT = 33, 5
MOVED_EVERY, MOVED_AT = 50, 7
PRIVATE_EVERY, PRIVATE = 50, 5
M32 = 0xFFFFFFFF


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def mix(a: int, b: int) -> int:
    """The generator's 32-bit hash of two 32-bit numbers (njsweb.js `mix`)."""
    return _fmix((((a * 0x9E3779B1) & M32) + b) & M32)


def _count(pages: int, every: int, at: int) -> int:
    """How many k in 0 … pages-1 have k % every == at."""
    return max(0, (pages - 1 - at) // every + 1)


@dataclass(frozen=True)
class NjsWebSpec:
    servers: int = 20
    pages: int = 2500  # pages per server, home page included
    links: int = 30  # ordinary links per page (tree, on-site, off-site), before the extras
    onsite: int = 24  # of which on the page's own site
    seed: int = 9
    net: str = "127.0.1"  # hosts are <net>.1 … <net>.<servers>
    port: int = 8097

    def __post_init__(self) -> None:
        if not 1 <= self.servers <= 254:
            raise ValueError(f"servers = {self.servers}: expected 1 … 254 (one loopback address each)")
        if self.onsite < BRANCH or self.onsite > self.links or self.pages <= 2 * self.links:
            raise ValueError(f"{self.pages} pages a server, {self.onsite} of {self.links} links on-site: cannot hold")

    @classmethod
    def for_pages(cls, n: int, *, servers: int | None = None, **kw) -> NjsWebSpec:
        """A web of about `n` pages (whole servers): 20 servers up to 10,000 pages, then one per 500 pages
        up to 100 servers (a million pages: 100 × 10,000, each server a tree of 5 levels)."""
        servers = servers or min(100, max(20, n // 500))
        return cls(servers=servers, pages=max(2 * kw.get("links", 30) + 1, -(-n // servers)), **kw)

    @property
    def hosts(self) -> list[str]:
        return [f"{self.net}.{i}" for i in range(1, self.servers + 1)]

    def seeds(self) -> list[str]:
        return [f"http://{h}:{self.port}/" for h in self.hosts]

    def expected(self) -> dict[str, int]:
        """What a complete crawl that obeys robots.txt finds from the home pages: pages (200), gone (404),
        moved (301), the URLs it fetches (all three), robots-excluded URLs, Link rows (one per distinct link
        of a 200 page, and one per redirect to its target) and the requests nginx sees (with robots.txt
        and sitemap.xml once per server)."""
        s, p = self.servers, self.pages
        gone, moved = _count(p, GONE_EVERY, GONE_AT), _count(p, MOVED_EVERY, MOVED_AT)
        private_links = _count(p, PRIVATE_EVERY, 0)
        out = {
            "pages": s * p,
            "gone": s * gone,
            "moved": s * moved,
            "excluded": s * min(PRIVATE, private_links),
            "links": s * (p * self.links + gone + moved + private_links) + s * moved,
            "robots": s,
        }
        out["fetched"] = out["pages"] + out["gone"] + out["moved"]
        out["requests"] = out["fetched"] + 2 * s
        return out


class Twin:
    """The Python twin of njsweb.js: each page's links, each URL's status and redirect target."""

    def __init__(self, spec: NjsWebSpec):
        self.spec = spec

    def origin(self, s: int) -> str:
        return f"http://{self.spec.net}.{s + 1}:{self.spec.port}"

    @staticmethod
    def path(k: int) -> str:
        return "/" if k == 0 else f"/p/{k}"

    def key(self, s: int, k: int) -> int:
        return mix(mix(self.spec.seed, s), k)

    def targets(self, s: int, k: int) -> list[tuple[int, str]]:
        """The page's links as (server, path), in the page's order (njsweb.js `targets`)."""
        spec, key = self.spec, self.key(s, k)
        children = range(k * BRANCH + 1, min(k * BRANCH + BRANCH + 1, spec.pages))
        out = [(s, self.path(c)) for c in children]
        seen, i = {k, *children}, 0
        onsite = spec.onsite if spec.servers > 1 else spec.links
        while len(out) < onsite:
            i += 1
            c = mix(key, i) % spec.pages
            if c not in seen:
                seen.add(c)
                out.append((s, self.path(c)))
        off: set[tuple[int, int]] = set()
        while len(out) < spec.links:
            i += 1
            x = mix(key, i)
            t = x % (spec.servers - 1)
            t += t >= s
            c = mix(x, 7) % spec.pages
            if (t, c) not in off:
                off.add((t, c))
                out.append((t, self.path(c)))
        if k % GONE_EVERY == GONE_AT:
            out.append((s, f"/gone/{k}"))
        if k % MOVED_EVERY == MOVED_AT:
            out.append((s, f"/moved/{k}"))
        if k % PRIVATE_EVERY == 0:
            out.append((s, f"/private/{(k // PRIVATE_EVERY) % PRIVATE}"))
        return out

    def links(self, s: int, k: int) -> list[str]:
        """The page's hrefs as the page writes them: a path on its own site, a full URL to another."""
        return [p if t == s else self.origin(t) + p for t, p in self.targets(s, k)]

    def moved_to(self, s: int, k: int) -> str:
        return self.origin(s) + self.path(mix(self.key(s, k), 999) % self.spec.pages)

    def answer(self, s: int, path: str) -> tuple[int, str | None]:
        """(status, Location) nginx gives `path` on server s."""
        pages = self.spec.pages

        def number(prefix: str) -> int | None:
            text = path.removeprefix(prefix)
            return int(text) if path.startswith(prefix) and text.isdigit() and str(int(text)) == text else None

        k = number("/p/")
        if path == "/" or (k is not None and 1 <= k < pages):
            return 200, None
        k = number("/moved/")
        if k is not None and 1 <= k < pages and k % MOVED_EVERY == MOVED_AT:
            return 301, self.moved_to(s, k)
        if path == "/robots.txt" or path.startswith("/private/"):
            return 200, None
        return 404, None


def njs_available() -> bool:
    from testweb.nginx import find_nginx

    return find_nginx() is not None and NJS_MODULE.exists()


class NjsWeb(OwnNginx):
    """Our own nginx (testweb.nginx) generating the web of `spec` with njsweb.js, on every host, one port."""

    modules = (str(NJS_MODULE),)

    def __init__(self, spec: NjsWebSpec, run_dir: Path, *, workers: int = 1, access_log: bool = True):
        super().__init__(run_dir, spec.hosts, spec.port, workers=workers)
        self.spec, self.log_requests = spec, access_log

    def http_lines(self) -> str:
        s = self.spec
        return "\n".join(
            [
                f"    js_path {HERE};",
                f"    js_import web from {SCRIPT.name};",
                f"    js_var $web_servers {s.servers};",
                f"    js_var $web_pages {s.pages};",
                f"    js_var $web_links {s.links};",
                f"    js_var $web_onsite {s.onsite};",
                f"    js_var $web_seed {s.seed};",
                f"    js_var $web_net {s.net};",
                *([] if self.log_requests else ["    access_log off;"]),
            ]
        )

    def server_lines(self) -> str:
        robots = ROBOTS_TXT.replace("\n", "\\n")
        return (
            f'        location = /robots.txt {{ default_type text/plain; return 200 "{robots}"; }}\n'
            "        location / { js_content web.serve; }"
        )


def port_is_free(spec: NjsWebSpec) -> bool:
    return not any(accepting(h, spec.port) for h in spec.hosts)


def main(argv: list[str] | None = None) -> None:
    import tempfile

    ap = argparse.ArgumentParser(description="Serve the long crawl's generated web until Ctrl-C.")
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--pages", type=int, default=2500)
    ap.add_argument("--port", type=int, default=8097)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args(argv)
    spec = NjsWebSpec(servers=args.servers, pages=args.pages, port=args.port)
    with tempfile.TemporaryDirectory(prefix="njsweb-") as tmp, NjsWeb(spec, Path(tmp), workers=args.workers):
        print(f"serving {spec.servers} × {spec.pages:,} pages on {spec.seeds()[0]} … (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()

"""A generated site where a stated share of pages build their links and text with JavaScript, for the render
benchmark (bench/render.py): plain pages (with an analytics-like inline script, as most sites have), and
JavaScript pages of three kinds — an empty mount element filled by a script file, links written by an inline
script, a <noscript> notice with a script file — each writing links (some to pages nothing else links) and a
paragraph of text in the browser. Served on one loopback address by a threaded HTTP server."""

from __future__ import annotations

import random
from http.server import ThreadingHTTPServer

from .serving import answer_handler, serve_in_thread, server_stop

WORDS = ("river", "stone", "lantern", "copper", "meadow", "harbor", "signal", "orchard", "glacier", "velvet")


class JsWeb:
    def __init__(self, *, pages: int = 200, js_share: float = 0.25, seed: int = 1, ip: str = "127.0.0.61") -> None:
        rng = random.Random(seed)
        self.ip = ip
        n_js = round(pages * js_share)
        n_hidden = max(1, n_js // 2)  # pages only scripts link to (plain HTML themselves)
        n_plain = pages - n_js - n_hidden
        self.plain = ["/"] + [f"/p{i}.html" for i in range(1, n_plain)]
        self.js = [f"/app{i}" for i in range(n_js)]
        self.hidden = [f"/h{i}.html" for i in range(n_hidden)]
        self.pages: dict[str, bytes] = {}
        self.scripts: dict[str, bytes] = {}
        text = lambda n: " ".join(rng.choice(WORDS) for _ in range(n))  # noqa: E731
        for i, path in enumerate(self.plain):
            links = [self.plain[(i + 1) % n_plain], rng.choice(self.plain), rng.choice(self.plain)]
            if i < n_js:
                links.append(self.js[i])  # every JavaScript page is linked from a plain one
            self.pages[path] = _plain(f"Page {i}", text(80), links)
        for i, path in enumerate(self.hidden):
            self.pages[path] = _plain(f"Hidden {i}", text(80), [rng.choice(self.plain)])
        for i, path in enumerate(self.js):
            written = [self.hidden[i % n_hidden], rng.choice(self.plain), rng.choice(self.plain)]
            code = _writer(written, text(60))
            kind = i % 3
            if kind == 0:
                self.scripts[f"/static/app{i}.js"] = code.encode()
                body = f'<div id="root"></div><script src="/static/app{i}.js"></script>'
            elif kind == 1:
                body = f"<h1>App {i}</h1><p>{text(50)}</p><div id=list></div><script>{code}</script>"
            else:
                self.scripts[f"/static/app{i}.js"] = code.encode()
                body = (
                    "<noscript>Please enable JavaScript to use this site.</noscript>"
                    f'<p>{text(50)}</p><div id=list></div><script src="/static/app{i}.js"></script>'
                )
            self.pages[path] = f"<html><head><title>App {i}</title></head><body>{body}</body></html>".encode()
        self._server: ThreadingHTTPServer | None = None

    @property
    def origin(self) -> str:
        assert self._server is not None
        return f"http://{self.ip}:{self._server.server_address[1]}"

    def answer(self, path: str) -> tuple[int, str, bytes]:
        path = path.split("?")[0]
        if path in self.pages:
            return 200, "text/html; charset=utf-8", self.pages[path]
        if path in self.scripts:
            return 200, "application/javascript", self.scripts[path]
        if path == "/robots.txt":
            return 200, "text/plain", b"User-agent: *\nDisallow:\n"
        return 404, "text/html", b"<html><body>not here</body></html>"

    def __enter__(self) -> JsWeb:
        self._server = serve_in_thread(self.ip, 0, answer_handler(self.answer))
        return self

    def __exit__(self, *exc) -> None:
        server_stop(self._server)


def _plain(title: str, text: str, links: list[str]) -> bytes:
    anchors = " ".join(f'<a href="{href}">{href}</a>' for href in links)
    return (
        f"<html><head><title>{title}</title><script>window.dataLayer = window.dataLayer || [];</script></head>"
        f"<body><h1>{title}</h1><p>{text}</p><nav>{anchors}</nav></body></html>"
    ).encode()


def _writer(links: list[str], text: str) -> str:
    target = "(document.getElementById('root')||document.getElementById('list')||document.body)"
    code = "".join(
        f"(function(){{var a=document.createElement('a');a.href={href!r};a.textContent='more';"
        f"{target}.appendChild(a);}})();"
        for href in links
    )
    para = f"(function(){{var p=document.createElement('p');p.textContent={text!r};{target}.appendChild(p);}})();"
    return code + para

"""An HTTP monitor's content rule checked against the page a browser renders (content_rendered): text the
health page's script writes passes it, the same rule on the body as served fails, and a script's request to
a private address outside the allowed networks gets nothing."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crawler.render import find_chromium
from monitoring.accepted_codes import AcceptedCodes
from monitoring.content import ContentRule
from monitoring.services.check_fetch import checks_fetch
from monitoring.services.check_targets import Target

pytestmark = pytest.mark.skipif(not find_chromium(), reason="no Chromium installed")

SITE_IP, SPY_IP = "127.0.0.44", "127.0.0.45"


def _serve(ip: str, pages: dict[str, bytes], hits: list[str]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            hits.append(self.path)
            body = pages.get(self.path, b"")
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", "application/javascript" if self.path.endswith(".js") else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer((ip, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.django_db
def test_text_written_by_the_health_pages_script_passes_a_rendered_content_rule(settings):
    settings.CRAWL_ALLOW_PRIVATE = (f"{SITE_IP}/32",)
    spy_hits: list[str] = []
    spy = _serve(SPY_IP, {}, spy_hits)
    spy_url = f"http://{SPY_IP}:{spy.server_address[1]}/beacon"
    pages = {
        "/health": b'<html><body><div id="status"></div><script src="/status.js"></script></body></html>',
        "/status.js": (
            b"document.getElementById('status').textContent = 'ALL ' + 'SYSTEMS GO';"
            + f"fetch('{spy_url}').catch(function(){{}});".encode()
        ),
    }
    site = _serve(SITE_IP, pages, [])
    try:
        url = f"http://{SITE_IP}:{site.server_address[1]}/health"

        def target(rendered: bool) -> Target:
            rule = ContentRule(must="ALL SYSTEMS GO", rendered=rendered)
            return Target(1, url, False, 300.0, 3.0, AcceptedCodes(), 1, 1, content=rule)

        raw, rendered = checks_fetch(targets=[target(False), target(True)], retries=0)
        assert raw.category == "error" and "does not contain" in raw.detail
        assert rendered.category == "normal", rendered.detail
        assert spy_hits == []
    finally:
        for server in (site, spy):
            server.shutdown()
            server.server_close()

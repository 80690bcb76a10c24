"""Whether a page needs a browser: cheap signals read from the body the crawler already has and what the
parser found on it, and the per-host decision built from what rendering actually added on sampled pages.

Pure: no Django, no browser. The extract agent asks `render_reason` of every HTML page in `auto` mode; a
non-empty answer sends the page to the render agent (crawlcore.services.render). After a render,
`render_gain` says whether the rendered DOM held more than the raw body, and `HostDecision` turns a host's
samples into "render every page", "render none" or "keep sampling".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

# Reasons a page is rendered, as stored on the page (Page.render_reason). The first signal found wins.
NOSCRIPT = "noscript"  # a <noscript> notice asking for JavaScript
EMPTY_MOUNT = "empty_mount"  # an application's mount element (#root, #app, #__next…) with nothing in it
SCRIPT_LINKS = "script_links"  # paths written in inline scripts that no anchor of the page carries
THIN_TEXT = "thin_text"  # scripts, and next to no visible text
FRAMEWORK = "framework"  # a client-side framework's fingerprint, with little text
HOST = "host"  # not flagged itself: its host's sampled pages needed rendering (HostDecision)
ALWAYS = "always"  # the job or CRAWL_RENDER says to render every page

MODES = ("auto", "always", "never")

# Visible characters below which a page with scripts counts as thin; a real article or listing has more.
THIN_TEXT_CHARS = 200
# With a framework's fingerprint, a page below this much text is taken for a client-rendered shell.
FRAMEWORK_TEXT_CHARS = 600

# What a <noscript> notice says when it asks for JavaScript (read in its first 2,000 bytes).
_ASKS_FOR_JS = re.compile(rb"(?:enable|requires?|need|turn on|activate)\b[^<]{0,80}?javascript", re.I)
_MOUNT = re.compile(
    rb"<(?:div|main|section|app-root)\b[^>]{0,300}?\bid\s*=\s*[\"']?(?:root|app|__next|___gatsby|__nuxt|svelte|main-app)"
    rb"[\"']?[^>]{0,300}>\s{0,1000}</(?:div|main|section|app-root)>",
    re.I,
)
_ANGULAR_ROOT = re.compile(rb"<app-root\b[^>]{0,300}>\s{0,1000}</app-root>", re.I)
_FINGERPRINTS = re.compile(
    rb"data-reactroot|__NEXT_DATA__|/_next/static/|ng-version=|data-v-app|window\.__NUXT__|/_nuxt/"
    rb"|id=[\"']?___gatsby|data-svelte|ember-application|react-dom(?:\.production)?(?:\.min)?\.js",
    re.I,
)
_SCRIPT_OPEN = re.compile(rb"<script\b", re.I)
# Bounds of the detector's own reading, so that a hostile page (thousands of unclosed tags) costs it little:
# the tags it looks at, and the bytes of each.
MAX_TAGS = 100
MAX_TAG_BYTES = 100_000
# A quoted same-site path or absolute URL in script text, not one of a script's own resources.
_SCRIPT_PATH = re.compile(r"""["'`]((?:https?://[^"'`\s<>]{3,200})|(?:/[A-Za-z0-9_\-.~%/]{1,200}))["'`]""")
_RESOURCE_END = re.compile(r"\.(?:js|mjs|css|png|jpe?g|gif|svg|webp|ico|woff2?|ttf|json|map)(?:[?#].*)?$", re.I)


def _elements(body: bytes, name: bytes) -> list[tuple[bytes, bytes]]:
    """(attributes, content) of the first MAX_TAGS `<name>` elements, each read up to MAX_TAG_BYTES: found
    by plain searches, no backtracking, whatever the page."""
    lower = body.lower()
    out: list[tuple[bytes, bytes]] = []
    at = 0
    while len(out) < MAX_TAGS:
        start = lower.find(b"<" + name, at)
        if start < 0:
            break
        after = start + len(name) + 1
        if after < len(lower) and lower[after : after + 1] not in b" \t\r\n>/":
            at = after  # <scripts…>, another tag
            continue
        close = lower.find(b">", after, after + MAX_TAG_BYTES)
        if close < 0:
            break
        end = lower.find(b"</" + name, close, close + MAX_TAG_BYTES)
        end = end if end >= 0 else min(len(body), close + MAX_TAG_BYTES)
        out.append((body[after:close], body[close + 1 : end]))
        at = end
    return out


def _script_paths(body: bytes) -> set[str]:
    paths: set[str] = set()
    for attrs, code in _elements(body, b"script"):
        if b"src=" in attrs.lower() or not code.strip():
            continue
        if re.search(rb"type\s*=\s*[\"']?application/(?:ld\+)?json", attrs, re.I):
            continue  # data, not code (JSON-LD): its URLs are not links a reader meets
        for path in _SCRIPT_PATH.findall(code.decode("utf-8", "replace")):
            if not _RESOURCE_END.search(path) and path not in ("/", "//"):
                paths.add(path)
    return paths


def render_reason(body: bytes, *, text: str, links: list[str], page_url: str = "") -> str:
    """Why this HTML page looks built by JavaScript ("" when nothing says so). `text` is the visible text
    the parser found, `links` the absolute URLs of its links."""
    if any(_ASKS_FOR_JS.search(content[:2000]) for _, content in _elements(body, b"noscript")):
        return NOSCRIPT
    if _MOUNT.search(body) or _ANGULAR_ROOT.search(body):
        return EMPTY_MOUNT
    if not _SCRIPT_OPEN.search(body):
        return ""
    known = set(links)
    for path in _script_paths(body):
        if path.startswith("/") and not any(link.endswith(path) or f"{path}?" in link for link in known):
            return SCRIPT_LINKS
        if path.startswith("http") and path not in known:
            return SCRIPT_LINKS
    chars = len(text.strip())
    if chars < THIN_TEXT_CHARS:
        return THIN_TEXT
    if chars < FRAMEWORK_TEXT_CHARS and _FINGERPRINTS.search(body):
        return FRAMEWORK
    return ""


def render_gain(*, raw_links: set[str], dom_links: set[str], raw_text: str, dom_text: str) -> bool:
    """Whether the rendered DOM gave what the raw body did not: a link the parser had not found, or a good
    deal more text (a fifth more, and at least a hundred characters)."""
    if dom_links - raw_links:
        return True
    extra = len(dom_text.strip()) - len(raw_text.strip())
    return extra >= 100 and extra >= 0.2 * max(len(raw_text.strip()), 1)


class HostRender(enum.StrEnum):
    """A host's rendering decision (Server.render_decision)."""

    SAMPLING = ""  # not decided: flagged pages are rendered, and each render is a sample
    RENDER = "render"  # its sampled pages needed rendering: every page is rendered
    PLAIN = "plain"  # its sampled pages never did: flagged pages are not rendered


@dataclass(frozen=True)
class HostDecision:
    """Turns a host's counts into its decision: `seen` pages of the host read in auto mode, `samples` of
    them rendered, `gains` of those for which the browser gave more (render_gain).

    RENDER when, after `decide_after` pages, at least `render_share` of the pages seen needed the browser:
    most of the host is built by JavaScript (a single-page application), so every page is rendered without
    waiting for its signals, which such a host's pages do not all show. Each of its renders is still a
    sample (the raw body is parsed anyway), so the decision is re-checked as it goes and falls back to
    sampling when the share drops. PLAIN when `decide_after` samples gave nothing: the signals mislead on
    this host, and its flagged pages are no longer rendered, but for one in `recheck_every`."""

    decide_after: int = 4
    render_share: float = 0.5
    recheck_every: int = 50

    def decide(self, *, current: str, seen: int, samples: int, gains: int) -> HostRender:
        state = HostRender(current)
        if seen >= self.decide_after and gains >= self.render_share * seen:
            return HostRender.RENDER
        if samples >= self.decide_after and gains == 0:
            return HostRender.PLAIN
        if state == HostRender.PLAIN and gains:
            return HostRender.SAMPLING  # a re-check gained: sample again
        return HostRender.SAMPLING if state == HostRender.RENDER else state

    def wants(self, *, decision: str, flagged: bool, seen_since: int) -> bool:
        """Whether a page of a host in `decision` is rendered: flagged or not, and `seen_since` the host's
        pages seen since its last render (for the PLAIN host's occasional re-check)."""
        state = HostRender(decision)
        if state == HostRender.RENDER:
            return True
        if state == HostRender.PLAIN:
            return flagged and seen_since >= self.recheck_every
        return flagged

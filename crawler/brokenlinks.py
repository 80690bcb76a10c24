"""When a link is broken for a reader, and how a report writes it down (pure).

A link is broken when its target is Dead or NoResponse (no answer, or a 4xx/5xx), when the target
redirects and the chain ends in such a URL (or loops, or points nowhere), or when its #fragment names
no element of the page it points to ("missing anchor").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from .sanitize import terminal_safe

MISSING_ANCHOR = "missing anchor"
# A spreadsheet reads a cell starting with one of these as a formula (CSV injection); tab and CR too.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class Hop:
    """One URL of a redirect chain as the crawl last saw it."""

    url: str
    state: str
    status: int | None
    failure_kind: str
    redirect_to: int | None = None  # the next URL's id when this one redirects


@dataclass(frozen=True, slots=True)
class Verdict:
    """A broken target: the status and failure kind of the URL that failed, and the chain that led there
    (empty for a target that failed itself)."""

    status: int | None
    failure_kind: str
    chain: tuple[str, ...] = ()


def verdict_of(start: int, hops: dict[int, Hop], failing: frozenset[str], max_hops: int) -> Verdict | None:
    """Follow `start` through `hops` (every URL the chain may pass, by id): a Verdict when it ends broken,
    None when it ends in a page that answers or in one not checked yet."""
    seen: list[int] = []
    current: int | None = start
    while current is not None:
        hop = hops.get(current)
        if hop is None:
            return None  # leads to a URL not known or not checked: nothing to report yet
        if current in seen or len(seen) > max_hops:
            return Verdict(hop.status, "redirect loop", _chain(seen, current, hops))
        if hop.state in failing:
            return Verdict(hop.status, hop.failure_kind or "no response", _chain(seen, current, hops) if seen else ())
        if hop.redirect_to is None:
            if hop.failure_kind.startswith(("bad_redirect", "too_many_redirects")):
                return Verdict(hop.status, hop.failure_kind, _chain(seen, current, hops) if seen else ())
            return None
        seen.append(current)
        current = hop.redirect_to
    return None


def _chain(seen: list[int], last: int, hops: dict[int, Hop]) -> tuple[str, ...]:
    return tuple(_hop_text(hops[i]) for i in [*seen, last])


def _hop_text(hop: Hop) -> str:
    return f"{hop.url} [{hop.status}]" if hop.status is not None else f"{hop.url} [{hop.failure_kind or '-'}]"


def chain_text(chain: Iterable[str]) -> str:
    return " -> ".join(chain)


def fragment_missing(fragment: str, anchors: str | None) -> bool:
    """True when `fragment` (as written after #) names no element of a page whose ids and <a name>s are
    `anchors` (one a line; None: not known, so never missing). Empty, "top" (HTML's scroll to top) and
    text fragments (#:~:text=) always resolve."""
    if anchors is None or not fragment or fragment.lower() == "top" or fragment.startswith(":~:"):
        return False
    names = anchors.split("\n")
    return fragment not in names and unquote(fragment) not in names


def missing_fragments(fragments: str, anchors: str | None) -> list[tuple[str, str]]:
    """(fragment, anchor text) of each of a link's #fragments (Link.fragments: "fragment<TAB>text" lines)
    that names nothing on the target page."""
    out = []
    for line in fragments.split("\n") if fragments else ():
        fragment, _, text = line.partition("\t")
        if fragment_missing(fragment, anchors):
            out.append((fragment, text))
    return out


def neutralised(cell: str) -> str:
    """A value written into CSV as data, never as a spreadsheet formula (OWASP: prefix a quote), and with no
    control character a terminal showing the file would act on (crawler.sanitize.terminal_safe)."""
    cell = terminal_safe(cell)
    return f"'{cell}" if cell.startswith(FORMULA_PREFIXES) else cell


def report_cell(value: object) -> str:
    """One value of a report's CSV or table: nothing for None, yes/no, numbers as written, and any text
    neutralised (names and patterns are operators' words: data, never a spreadsheet formula)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return str(value)
    return neutralised(str(value))


def within_site(same_server: bool, mode: str) -> bool:
    """Whether a fragment is checked: mode 'site' (links within one server), 'all' or 'off'."""
    return mode == "all" or (mode == "site" and same_server)


Resolver = Callable[[int], Verdict | None]

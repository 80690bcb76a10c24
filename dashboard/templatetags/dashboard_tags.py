"""Small formatting helpers for the dashboard templates. Every filter's output is plain text, autoescaped;
the tags build markup in Python where a page has hundreds of cells, escaping what they interpolate."""

from __future__ import annotations

import html

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from crawlcore.templatetags.times import when_text
from dashboard.formats import heat_scale, ms

register = template.Library()


register.filter("ms", ms)


@register.filter
def pct(value) -> str:
    return "–" if value is None else f"{float(value):.2f} %"


@register.filter
def per_s(value) -> str:
    return f"{float(value):.2f}/s"


@register.filter
def short_origin(origin) -> str:
    """A server's origin without its scheme, the way a cell of the priority table names it."""
    return str(origin).split("://", 1)[-1]


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def heat(fraction) -> str:
    """A background colour for a heatmap cell: green (the row's lightest hour) to red (its heaviest)."""
    if fraction is None:
        return "#eee"
    hue = round(120 * (1.0 - max(0.0, min(1.0, float(fraction)))))
    return f"hsl({hue}, 70%, 60%)"


@register.simple_tag
def heat_legend() -> SafeString:
    """The heatmap's scale: swatches from its floor (green) to the delay threshold (red), labelled."""
    lo, hi = heat_scale()
    steps = 6
    cells = []
    for i in range(steps):
        value = lo * (hi / lo) ** (i / (steps - 1))
        cells.append(f'<span style="background: {heat(i / (steps - 1))}">{ms(value)}</span>')
    tail = f"{ms(hi)} and slower: a delay; grey: no answered check that hour"
    return format_html('<p class="heatlegend">{}<span class="note">{}</span></p>', mark_safe("".join(cells)), tail)


@register.simple_tag
def heat_cells(row) -> SafeString:
    """A heatmap row's 24 cells (`<td>` with the colour, the mean as a tooltip and as text). Built here
    rather than by a template loop: the heatmap has thousands of cells, and three filters per cell through
    the template engine cost more than the page's queries. Safe to mark safe: every value interpolated is
    a number formatted here (the row's server name is rendered by the template, escaped)."""
    out = []
    for value, fraction in row.cells:
        if value is None:
            out.append('<td style="background: #eee" title="–"></td>')
        else:
            out.append(f'<td style="background: {heat(fraction)}" title="{ms(value)}">{float(value):.0f}</td>')
    return mark_safe("".join(out))  # numbers only, formatted above


# Markup with many cells, built here rather than by template loops: a page of them through the template
# engine costs more than all its queries. Every value is escaped on the way in (`_e`, the same escaping as
# Django's autoescape: URLs, titles, reasons and details come from the web); only the joined result is
# marked safe.


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _local(at) -> str:
    local = timezone.localtime(at)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


def _wrapped(url: str) -> str:
    """The URL escaped, with a break opportunity after each "/": on a phone it wraps at its slashes, not
    one character a line."""
    return _e(url).replace("/", "/<wbr>")


def _url_link(url: str, server_id: int | None = None) -> str:
    """A crawled URL as a link (http and https only: a scraped `javascript:` stays text), plus a link to
    the server page of the URL's server when given."""
    text = _wrapped(url)
    if url.startswith(("http://", "https://")):
        text = f'<a href="{_e(url)}" rel="noopener noreferrer nofollow">{text}</a>'
    if server_id is not None:
        href = reverse("dashboard:server", args=[server_id])
        text += f' <a class="srv" href="{href}" title="the server\'s page">[server]</a>'
    return text


@register.filter
def url_link(url) -> SafeString:
    """url_link for templates: {{ p.url|url_link }}."""
    return mark_safe(_url_link(str(url)))  # escaped in _url_link


@register.simple_tag
def check_bar(checks) -> SafeString:
    """The bar of a server's last checks: one segment per check, coloured by category, its summary as
    the tooltip."""
    spans = (f'<span class="{_e(c["category"])}" title="{_e(c["summary"])}"></span>' for c in checks)
    return mark_safe("".join(spans))  # every value escaped


@register.simple_tag
def check_rows(checks) -> SafeString:
    """Rows of the last-checks table: time, agent, URL, status, category, latency, failure."""
    rows = []
    for c in checks:
        status = "–" if c["status_code"] is None else c["status_code"]
        category = _e(c["category"])
        # The detail of a success is only "HTTP 200": a failure column shows failures.
        failed = c["failure_kind"] or c["category"] in ("disconnect", "error")
        detail = f' <span class="note">{_e(c["detail"])}</span>' if failed and c["detail"] else ""
        failure = _e(c["failure_kind"]) + detail
        rows.append(
            f"<tr><td>{_local(c['checked_at'])}</td><td>{_e(c['agent'])}</td>"
            f'<td class="url">{_url_link(c["requested_url"])}</td>'
            f'<td>{_e(status)}</td><td><span class="badge {category}">{category}</span></td>'
            f"<td>{_e(c['latency'])}</td><td>{failure}</td></tr>\n"
        )
    return mark_safe("".join(rows))  # every value escaped above


@register.simple_tag
def timeline_rows(changes) -> SafeString:
    """Rows of the status timeline: time, from, to, reason."""
    rows = []
    for c in changes:
        before, after = _e(c["from_status"]), _e(c["to_status"])
        rows.append(
            f'<tr><td>{_e(c["at"])}</td><td><span class="badge {before}">{before}</span></td>'
            f'<td><span class="badge {after}">{after}</span></td><td>{_e(c["reason"])}</td></tr>\n'
        )
    return mark_safe("".join(rows))  # every value escaped above


@register.simple_tag
def dead_link_rows(links) -> SafeString:
    """Rows of a site's broken links, grouped by source page (its title and URL on the first row of each):
    the anchor text and element, the target and its state, status or failure kind (with the redirect chain
    or the missing anchors), first seen broken and last checked."""
    rows, page = [], None
    for link in links:
        cell = ""
        if link["from_url_id"] != page:
            page = link["from_url_id"]
            title = f'<span class="title">{_e(link["title"])}</span><br>' if link["title"] else ""
            cell = f"{title}{_url_link(link['from_url__url'])}"
        state = _e(link["to_url__state"])
        status = "–" if link["status"] is None else link["status"]
        chain = f'<br><span class="note">{_e(link["redirect_chain"])}</span>' if link["redirect_chain"] else ""
        rows.append(
            f'<tr><td class="url">{cell}</td><td>{_e(link["anchor_text"])}<br><span class="note">'
            f"{_e(link['element'])}</span></td>"
            f'<td class="url">{_url_link(link["to_url__url"], link.get("to_url__server_id"))}{chain}</td>'
            f'<td><span class="state {state}">{state}</span></td><td>{_e(status)}</td>'
            f"<td>{_e(link['failure_kind'])}</td><td>{_e(_when(link['first_broken_at']))}</td>"
            f"<td>{_e(_when(link['last_checked_at']))}</td></tr>\n"
        )
    return mark_safe("".join(rows))  # every value escaped above


def _when(at) -> str:
    return when_text(at) if at else "–"

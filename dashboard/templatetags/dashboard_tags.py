"""Small formatting helpers for the dashboard templates. Every filter's output is plain text, autoescaped;
the two tags build markup in Python where a page has hundreds of cells (escaping what they interpolate)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def ms(value) -> str:
    """Milliseconds, short: '12 ms', '1.2 s', or an en dash when unknown."""
    if value is None:
        return "–"
    value = float(value)
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


@register.filter
def pct(value) -> str:
    return "–" if value is None else f"{float(value):.2f} %"


@register.filter
def per_s(value) -> str:
    return f"{float(value):.2f}/s"


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
    return mark_safe("".join(out))  # noqa: S308  # numbers only, formatted above


@register.simple_tag
def check_bar(checks) -> SafeString:
    """The bar of a server's last checks: one segment per check, coloured by category, its summary as
    the tooltip (format_html_join escapes both: URLs and reasons come from the web)."""
    return format_html_join("", '<span class="{}" title="{}"></span>', ((c["category"], c["summary"]) for c in checks))


# Table rows with many cells, built by format_html (which escapes every value: URLs, titles and reasons
# come from the web) rather than by a template loop: a page of them costs a fifth as much.


def _failure(kind: str, detail: str) -> SafeString:
    return format_html('{} <span class="note">{}</span>', kind, detail) if detail else format_html("{}", kind)


@register.simple_tag
def check_rows(checks) -> SafeString:
    """Rows of the last-checks table: time, agent, URL, status, category, latency, failure."""
    row = (
        '<tr><td>{}</td><td>{}</td><td class="url">{}</td><td>{}</td><td><span class="badge {}">{}</span></td>'
        "<td>{}</td><td>{}</td></tr>\n"
    )
    return format_html_join(
        "",
        row,
        (
            (
                c["at"],
                c["agent"],
                c["requested_url"],
                "–" if c["status_code"] is None else c["status_code"],
                c["category"],
                c["category"],
                c["latency"],
                _failure(c["failure_kind"], c["detail"]),
            )
            for c in checks
        ),
    )


@register.simple_tag
def timeline_rows(changes) -> SafeString:
    """Rows of the status timeline: time, from, to, reason."""
    row = (
        '<tr><td>{}</td><td><span class="badge {}">{}</span></td><td><span class="badge {}">{}</span></td>'
        "<td>{}</td></tr>\n"
    )
    return format_html_join(
        "",
        row,
        ((c["at"], c["from_status"], c["from_status"], c["to_status"], c["to_status"], c["reason"]) for c in changes),
    )


@register.simple_tag
def dead_link_rows(links) -> SafeString:
    """Rows of a site's dead links: the page (title, URL), the target, its state, last status, failure kind
    and last check."""
    row = (
        '<tr><td class="url">{}{}</td><td class="url">{}</td><td><span class="state {}">{}</span></td>'
        "<td>{}</td><td>{}</td><td>{}</td></tr>\n"
    )
    return format_html_join(
        "",
        row,
        (
            (
                format_html('<span class="title">{}</span><br>', link["title"]) if link["title"] else "",
                link["from_url__url"],
                link["to_url__url"],
                link["to_url__state"],
                link["to_url__state"],
                "–" if link["to_url__last_status"] is None else link["to_url__last_status"],
                link["to_url__failure_kind"],
                link["checked"],
            )
            for link in links
        ),
    )

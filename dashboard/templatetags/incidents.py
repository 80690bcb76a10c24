"""`{% server_incidents server_id %}`: a server's latest incidents, each linked to its incident page, with
what the server answered in one line (the server page's section; the page has checked who may see it)."""

from __future__ import annotations

from django import template

from monitoring.selectors_evidence import incidents_views, incidents_visible

register = template.Library()

SHOWN = 10  # newest first


@register.inclusion_tag("dashboard/_server_incidents.html")
def server_incidents(server_id: int) -> dict:
    return {"incidents": incidents_views(incidents_visible(groups=None).filter(server_id=server_id)[:SHOWN])}

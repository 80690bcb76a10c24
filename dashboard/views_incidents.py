"""The incident page (/dashboard/incidents/ID/): an incident with what the server answered (its evidence,
monitoring.selectors_evidence), for the readers of its server's group; another group's is a 404. Operators
only: the public status page (dashboard.public) shows incidents without any of it."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from crawlcore.access import server_groups_of
from monitoring.evidence import PHASES
from monitoring.selectors_evidence import incident_view, incidents_visible

from .view_access import dashboard_view


@dashboard_view
def incident(request: HttpRequest, incident_id: int) -> HttpResponse:
    found = incidents_visible(groups=server_groups_of(request.user)).filter(id=incident_id).first()
    if found is None:
        raise Http404("no such incident")
    view = incident_view(found)
    ev = view["evidence"]
    timings = [(name.replace("_", " "), ev["timings_ms"].get(name)) for name in (*PHASES, "total")] if ev else []
    return render(request, "dashboard/incident.html", {"incident": view, "timings": timings})

"""`GET /api/v1/incidents/` and `/api/v1/incidents/ID/`: incidents with what the server answered (evidence:
status, headers, the body's first bytes, timings, each location's verdict, the last good answer and what
differs), read only, in monitoring.selectors_evidence's one form.

A reader limited to server groups sees the incidents of those groups only; another group's is a 404, as
if it did not exist. Kept beside crawladmin.api_v1 (whose paging and scoping it uses) rather than in it.
"""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.selectors_evidence import incident_view, incidents_views, incidents_visible

from .api_v1 import _groups, _page


class IncidentList(APIView):
    """GET: incidents newest first (`?status=open` for the unresolved ones), each with its evidence."""

    def get(self, request):
        limit, offset = _page(request)
        qs = incidents_visible(groups=_groups(request))
        if request.query_params.get("status") == "open":
            qs = qs.filter(resolved_at__isnull=True)
        page = qs[offset : offset + limit]
        return Response({"count": qs.count(), "limit": limit, "offset": offset, "incidents": incidents_views(page)})


class IncidentDetail(APIView):
    """GET: one incident with its evidence and updates."""

    def get(self, request, pk: int):
        # An id past the database's integers can name no row (and would overflow the query).
        incident = incidents_visible(groups=_groups(request)).filter(id=pk).first() if pk < 2**63 else None
        if incident is None:
            raise exceptions.NotFound(f"no incident {pk}")
        return Response(incident_view(incident))

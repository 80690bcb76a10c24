"""A chart's data as the dashboard's pages embed it: JSON text for a <script type="application/json">
element, shared by the crawl page's history and a server's latency chart."""

from __future__ import annotations

from dataclasses import dataclass

# As Django's json_script escapes, so the text can sit in a <script> element whatever it holds.
JSON_SCRIPT_ESCAPES = {ord(">"): "\\u003E", ord("<"): "\\u003C", ord("&"): "\\u0026"}


@dataclass(frozen=True)
class ChartData:
    """A chart's data as JSON text ready for a <script type="application/json"> element (escaped as
    Django's json_script escapes), and what the template needs to know about it."""

    kind: str
    points: int  # checks or hours in the range, answered or not: 0 draws no chart
    json: str

"""Server-side bar charts for the dashboard (pure; no Django): geometry in whole pixels, so the template
only places numbers and escaped labels into inline SVG. No JavaScript, nothing fetched."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

ROW = 24  # pixels per bar, gaps included
BAR = 16
LABEL_WIDTH = 180
WIDTH = 680
VALUE_WIDTH = 130  # room right of the longest bar for "1,234,567 (100.0%)"
MAX_LABEL = 28  # characters; longer labels (a scraped media type) are cut, the full one is the tooltip


@dataclass(frozen=True)
class Bar:
    label: str
    title: str  # the tooltip: full label and figures
    value_text: str
    y: int
    text_y: int
    width: int
    value_x: int


@dataclass(frozen=True)
class BarChart:
    title: str
    bars: tuple[Bar, ...]
    width: int
    height: int
    label_x: int  # right edge of the labels
    bar_x: int
    bar_height: int


def bar_chart(title: str, rows: Sequence[tuple[str, int, float]], *, max_rows: int = 15) -> BarChart:
    """A horizontal bar per (label, count, share), longest bar = largest count. Beyond `max_rows` rows the
    rest are summed into one "… N more" bar, so a crawl with 200 country codes still fits a screen."""
    rows = list(rows)
    if len(rows) > max_rows:
        rest = rows[max_rows - 1 :]
        rows = rows[: max_rows - 1] + [
            (f"… {len(rest)} more", sum(r[1] for r in rest), round(sum(r[2] for r in rest), 4))
        ]
    top = max((count for _, count, _ in rows), default=0)
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = []
    for i, (label, count, share) in enumerate(rows):
        width = round(span * count / top) if top else 0
        if count and width == 0:
            width = 1  # a non-zero count is always visible
        y = i * ROW + 4
        value_text = f"{count:,} ({share:.1%})"
        shown = label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1] + "…"
        bars.append(
            Bar(
                label=shown,
                title=f"{label}: {value_text}",
                value_text=value_text,
                y=y,
                text_y=y + BAR - 4,
                width=width,
                value_x=LABEL_WIDTH + width + 6,
            )
        )
    return BarChart(
        title=title,
        bars=tuple(bars),
        width=WIDTH,
        height=max(1, len(bars)) * ROW + 8,
        label_x=LABEL_WIDTH - 8,
        bar_x=LABEL_WIDTH,
        bar_height=BAR,
    )

"""A trend small enough for a table cell (the dashboard index's rows): a series' newest p50s as an SVG line, the
points a night found regressed as red dots. Drawn by hand, not with matplotlib as charts.py draws a report's: a
hundred rows of a few dozen points each, and a publish that stays free of matplotlib."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.page.blocks import Chart

WIDTH, HEIGHT = 120, 24


def trend_line(stem: str, values: Sequence[float], regressed: Sequence[bool]) -> Chart | None:
    """None without values; `regressed`: one flag per value."""
    if not values:
        return None
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    xy = [(2 + (WIDTH - 4) * k / max(len(values) - 1, 1), HEIGHT - 2 - (HEIGHT - 4) * (v - low) / span)
          for k, v in enumerate(values)]
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#c0392b"/>'
                   for (x, y), bad in zip(xy, regressed, strict=True) if bad)
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    title = f"trend of {len(values)} nights"
    svg = (f'<svg class="spark" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{title}"><polyline fill="none" stroke="#2c3e50" stroke-width="1.2" points="{line}"/>{dots}</svg>')
    return Chart(stem, title, svg)

"""A night's ratio reaches the dashboard with every digit, so the dashboard shows the number its page and JSON show
(report.formats.ratio of the same float); other figures are kept to 6 significant digits."""

from __future__ import annotations

from orchestrator.report.dashboard.model import COLUMNS, Point
from orchestrator.report.formats import ratio
from orchestrator.results.night_marks import PairMark
from orchestrator.store.series_rows import PointRow


def test_a_ratio_on_a_rounding_edge_is_the_pages_number() -> None:
    exact = 16.18502  # 6 significant digits make it 16.185, which formats as 16.18x; the page says 16.19x
    row = PointRow("r1", "2026-11-28T05:18:50+0000", "pinned", "mlp", "ok", None, 0.514212345, (0.51, 0.52), 0, None,
                   None, None, None, None, ())
    values = dict(zip(COLUMNS, Point(row, (), PairMark("regressed", True, exact)).values("", []), strict=True))
    assert values["ratio"] == exact and ratio(values["ratio"]) == ratio(exact) == "16.19x"
    assert values["p50"] == 0.514212  # a latency: what a chart can show

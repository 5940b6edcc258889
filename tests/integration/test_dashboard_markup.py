"""Issue 35 item 5: plotly draws a subset of HTML in every text it shows, so an event name holding markup was a live
link in the series page's legend and hovers. Every text plotly draws is escaped (assets.SERIES_JS, `t()`): real
headless Chromium opens the published page from the file system and the legend shows the markup as text."""

from __future__ import annotations

import re
from pathlib import Path

from testbed.chromium import visit_file

from orchestrator.report.dashboard.site import publish
from orchestrator.store import open_store
from tests.helpers.synthetic_store import Nights, record_nights

EVIL = '<a href="https://evil.example/">x</a><b>y</b>'


def test_markup_in_an_event_name_is_text_in_plotlys_legend_never_a_link(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        record_nights(store, tmp_path / "runs", Nights(2, kernels=lambda night: [
            (EVIL, "", 0.2), ("Fully Connected (NC, F32) GEMM #1", "fc1", 0.1)]))
    publish(tmp_path / "site", tmp_path / "s.db")
    (page,) = (tmp_path / "site" / "series").glob("*.html")
    seen = visit_file(page, tmp_path / "chromium")
    assert seen.requests == [] and seen.console == [], (seen.requests, seen.console)
    assert seen.dom.count('class="main-svg"') >= 2  # plotly drew the charts
    assert re.findall(r"<a[^>]*evil", seen.dom) == []  # no element made of the name: no link, no bold
    legend = re.findall(r'<text class="legendtext"[^>]*>(.*?)</text>', seen.dom)
    assert "&lt;a href=\"https://evil.example/\"&gt;x&lt;/a&gt;&lt;b&gt;y&lt;/b&gt;" in legend, legend
    assert "fc1 Fully Connected" in legend

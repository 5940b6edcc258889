"""The nightly dashboard (`etfarm publish --out DIR`, a nightly plan's `publish: DIR`): the store as a static site.

    site.publish(out, store) -> Published   read the store (only runs new since the last publish), write the site
    collect.py   stored runs -> RunEntry (points keyed by likeness.SeriesKey, verdicts and night from beside the run)
    series.py    points -> Series (change points: changes.find_changes), ordered; nights; regressions
    pages.py     index (filters, trend lines from render/trend_line.py), nights and regressions pages
    series_page.py   a page per series: plotly charts from one shared script, the same facts as text
    assets.py    plotly.js (from the plotly wheel), the style sheet (the report's), the scripts

Every page is a report page (report/page/blocks.py `Page`) written by the report's HTML renderer (render/html.py):
one writer and one escaping rule for the run's report, the A/B page and the site.
    model.py     Point, RunEntry, Series, Night

Nothing heavy at import: plotly is only read as a file, numpy loads where samples are read.
"""

"""Writing a page or a report out: html.py (one self-contained file) and markdown.py (a CI job summary) write
a page (report/page/); charts.py draws a report's charts (matplotlib, only for the formats that show them);
export.py writes the report's data as JSON and CSV. Renderers compute nothing.
"""

"""The report's builders: a job (from memory or its run directory), its stats.csv rows and the store's history
into the frozen data of report/model/, every number and claim decided here and nowhere later.

    report.py      build_report / build_job_report: the Report, per model its latency, ops and history
    ops.py         per-op statistics from stats.csv rows, the timer's resolution
    ratios.py      the report's one statistic (p50) and its cluster-bootstrap intervals
    claims.py      which device may be called fastest
    trust.py       what to believe: flagged and left-out runs, the tracer's cost
    device_facts.py, history.py (the store's earlier runs), llm.py, memory.py, comparison.py (an A/B page's data)

Builders never draw: charts are rendering (report/render/charts.py).
"""

"""Reports: the printed tables, and the comparison report of a run (HTML, Markdown, JSON, CSV).

    summary, tables           text tables printed by `run` and `analyze`
    build.build_report(run_dir, baseline, history) -> model.Report     every number, computed once
    charts                    matplotlib -> inline SVG, for html and markdown
    html / markdown / export  renderers: format a Report, compute nothing
    output.write_report(run_dir, format, output, ...)                  `etfarm report`
    output.write_run_report(run_dir, warn, store)                      `etfarm run`'s hook, never raises
    history.history_points(job, store)                                 the store's earlier runs

Nothing is imported here, so `from orchestrator.report.summary import ...` stays light.
"""

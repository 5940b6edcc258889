"""What commands print on stdout, from the results model, the statistics and the store directly (no Report):

    table.py       the one text-table formatter
    events.py      per-event tables (`analyze`)
    summary.py     the run summary (`run`): per-op tables, wall-clock lines
    llm.py, llm_history.py   an LLM's figures and phases, its history
    history.py     `history` and `history show`
    verdicts.py    verdict tables (text and Markdown) and their legend, which A/B pages quote
    views.py       the `--json` documents
"""

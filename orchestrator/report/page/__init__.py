"""What a page says, built once from the report's data for every page format (HTML and Markdown).

    blocks.py      the page model: sections of paragraphs, lists, tables and figures, spans of text
    sections.py    the one list of a run's sections, which the page and its navigation both read
    run.py         a run's answer, what to trust, per model its latency, ops and history
    closing.py     numerics, what the devices were, how the numbers were computed
    llm.py, memory.py   an LLM's generation figures, the memory table
    comparison.py  an A/B page (a night, `compare --html`, `report --against`): verdicts first, then B's runs

Pages compute nothing: every number comes formatted (report/formats.py) from report/model/.
"""

"""One escaping rule per output format: every name a device, a model file or a user can choose goes through it.

Model, device, module, op and run names are the user's (a module may be called `<script>`), and
CI job summaries and PR comments render Markdown as HTML. So each renderer escapes ALL text it
did not write itself, with one function per format:

- `html_text`: `html.escape` (quotes too, so the same text is safe in attributes);
- `md_text`: a backslash before every ASCII punctuation character that can start Markdown or
  HTML in CommonMark/GFM inline text (`` \\ ` * _ [ ] < > & | ~ ! $ # ``): no tag, entity,
  link, image, emphasis, code span, table cell break or heading can come out of a name. Text
  always starts after a marker the renderer wrote (`- `, `| `, `### `) or a leading character
  is escaped (`md_line_start`), so no name starts a block either;
- `terminal_text`: control characters (ESC sequences, carriage returns, bells) shown as
  `\\xNN`, so a name cannot move the cursor or recolour a terminal; tab and newline too, so a
  name cannot break a table's lines;
- `script_json`: JSON a page's script reads (inline or a script file), ASCII, with every `<` written `\\u003c`:
  a name holding `</script>` or `<!--` can neither close the script element nor change how HTML reads it;
- CSV is written by the `csv` module (RFC 4180 quoting) and JSON by `json` (string escapes):
  their own rules, round-tripping every name exactly.

Every rule first makes control characters visible (`visible`), so an invisible byte in a name
shows in every format the same way.
"""

from __future__ import annotations

import html
import json
import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>&|~!$#])")
_MD_BLOCK_START = re.compile(r"^(\s*)(?:([-+=>])|(\d+)([.)]))")


def visible(text: str) -> str:
    """Control characters (C0, DEL, C1) as `\\xNN` text."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def html_text(text: str) -> str:
    return html.escape(visible(text), quote=True)


def md_text(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", visible(text))


def md_line_start(text: str) -> str:
    """Markdown text that begins a line: a leading list, quote, heading-underline or ordered-list
    marker is escaped too (`- x`, `> x`, `1. x` in a name would otherwise start a block)."""
    escaped = md_text(text)

    def fix(m: re.Match[str]) -> str:
        if m.group(2):
            return m.group(1) + "\\" + m.group(2)
        return m.group(1) + m.group(3) + "\\" + m.group(4)

    return _MD_BLOCK_START.sub(fix, escaped, count=1)


def terminal_text(text: str) -> str:
    return visible(text)


def script_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")

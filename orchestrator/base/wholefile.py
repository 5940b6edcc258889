"""Files are read whole or refused: how a reader tells a file cut short from one that is merely malformed.

A file etfarm reads back (a run directory's manifest.json and stats.csv, a numerics debug buffer) may have
been cut short: a copy that stopped, a full disk under another tool, a transfer killed halfway. A reader
must refuse it in one line naming the file rather than make something of its first half. Each format
says in its own way that it is whole: a CSV written by etfarm ends every line with `\\n`, a debug
buffer is as long as the runner said (`debug_buffer_used`), and JSON ends where its document does, which
`json_cut_short` recognises.
"""

from __future__ import annotations

import json
import re

_CUT_NUMBER = re.compile(r"-|[.eE][+-]?")  # what is left of a number cut after its sign, point or exponent
_WORDS = ("true", "false", "null")


def json_cut_short(exc: json.JSONDecodeError) -> bool:
    """Whether the document that raised `exc` stops where more was due (cut short) rather than going wrong
    somewhere: with a character appended that nothing may be followed by, the error moves to the end, or
    into a word or number the cut left unfinished."""
    text = exc.doc.rstrip()
    try:
        json.loads(text + "\x00")
    except json.JSONDecodeError as again:
        tail = text[again.pos:]
        return not tail or any(word.startswith(tail) for word in _WORDS) or bool(_CUT_NUMBER.fullmatch(tail))
    return False


def json_problem(exc: OSError | ValueError | RecursionError, what: str) -> str:
    """Why a JSON file (`what`: "manifest", ...) could not be read, in one line: cut short, or what went wrong."""
    if isinstance(exc, json.JSONDecodeError) and json_cut_short(exc):
        return f"not a whole {what}: it ends inside its JSON (cut short?)"
    if isinstance(exc, (OSError, UnicodeDecodeError, json.JSONDecodeError)):
        return f"cannot read {what}: {exc}"
    return f"cannot read {what}: {type(exc).__name__}: {str(exc)[:120]}"  # a 5000-digit integer, nesting past recursion

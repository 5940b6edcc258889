"""wholefile.py: a JSON document cut short is told apart from a malformed one."""

from __future__ import annotations

import json

import pytest

from orchestrator.base.wholefile import json_cut_short, json_problem
from tests.unit.run.golden_results import rich_job


def decode_error(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(text)
    return raised.value


def test_a_document_cut_anywhere_is_cut_short() -> None:
    text = json.dumps(rich_job().to_dict(), indent=2)  # strings, numbers (1.5, -1, 1e-05), true/false/null, nesting
    cuts = [n for n in range(1, len(text)) if not _parses(text[:n])]
    assert cuts and all(json_cut_short(decode_error(text[:n])) for n in cuts)


@pytest.mark.parametrize("text", ['{"a": x}', '{"a": 1}}', "[1, 2,, 3]", '{"a": "b"\n "c": 1}', '{"a": 1.x}', '{"a": -}',
                                  '{"a": tx}'])
def test_a_malformed_document_is_not(text: str) -> None:
    assert not json_cut_short(decode_error(text))
    assert json_problem(decode_error(text), "manifest").startswith("cannot read manifest: ")


def test_the_problem_in_words() -> None:
    assert json_problem(decode_error('{"a": [1, 2'), "manifest") == "not a whole manifest: it ends inside its JSON (cut short?)"
    assert json_problem(RecursionError("maximum recursion depth exceeded"), "manifest").startswith(
        "cannot read manifest: RecursionError: maximum")


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True

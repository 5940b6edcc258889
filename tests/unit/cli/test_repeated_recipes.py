"""`--recipe fp32 --recipe int8-static` keeps both (issue 35 item 8): the last alone won, fp32 silently dropped."""

from __future__ import annotations

import pytest

from orchestrator.cli import main
from orchestrator.cli.options import recipes_joined


def test_repeated_recipe_options_are_all_kept() -> None:
    assert recipes_joined(["fp32", "int8-static"]) == "fp32,int8-static"
    assert recipes_joined(["fp32,int8-dynamic", "int8-static"]) == "fp32,int8-dynamic,int8-static"
    assert recipes_joined(None) is None and recipes_joined([]) is None


def test_run_sees_every_repeated_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    # --ab takes one recipe: two given as repeated options are two, and said so before anything runs
    assert main(["run", "--ab", "a.py:build", "b.py:build", "--recipe", "fp32", "--recipe", "int8-static"]) == 2
    assert "--recipe one value each" in capsys.readouterr().err
    assert main(["run", "--model", "a.py:build", "--recipe", "fp32", "--recipe", "fp32"]) == 2
    assert "recipe 'fp32' given twice" in capsys.readouterr().err

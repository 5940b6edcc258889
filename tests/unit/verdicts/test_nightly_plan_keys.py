"""A nightly plan's `scheduler:` key (the run itself: tests/integration/test_scale.py) and `confirm:` key."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.verdicts.nightly import load_plan

BASE = "devices: [a]\nmodels: [m.py:build]\nreport: r\n"


def test_a_plan_names_its_farm_or_runs_on_this_host(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    assert load_plan(path).scheduler is None
    path.write_text(BASE + "scheduler: ' tcp://10.0.0.1:8786 '\n")
    assert load_plan(path).scheduler == "tcp://10.0.0.1:8786"


@pytest.mark.parametrize("value", ["''", "8786", "[tcp://a:1]"])
def test_a_bad_scheduler_names_the_key(tmp_path: Path, value: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + f"scheduler: {value}\n")
    with pytest.raises(ConfigError) as err:
        load_plan(path)
    assert str(err.value).startswith(str(path)) and "scheduler: expected a non-empty string" in str(err.value)


def test_confirmation_is_on_unless_the_plan_says_false(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    assert load_plan(path).confirm is True
    path.write_text(BASE + "confirm: false\n")
    assert load_plan(path).confirm is False
    path.write_text(BASE + "confirm: maybe\n")
    with pytest.raises(ConfigError, match="confirm: expected true or false"):
        load_plan(path)

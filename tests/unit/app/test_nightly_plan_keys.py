"""A nightly plan's `scheduler:`, `confirm:` and sweep keys (the run itself: tests/integration/test_farm.py, test_llm_jobs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.app.nightly_plan import load_plan
from orchestrator.base.errors import ConfigError
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS

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


def test_threads_and_generation_lengths_are_run_options(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + "threads: 2\nprompt_len: [32, 128]\ngen_len: 16\n")
    options = load_plan(path).options()
    assert (options.cpu_threads, options.thread_counts) == (2, ())
    assert (options.prompt_lens, options.gen_lens) == ((32, 128), (16,))
    path.write_text(BASE + "threads: [1, 4]\n")
    options = load_plan(path).options()
    assert (options.cpu_threads, options.thread_counts, options.prompt_lens) == (0, (1, 4), ())


@pytest.mark.parametrize(("key", "value"), [("threads", "-1"), ("threads", "[1, 1]"), ("prompt_len", "0"),
                                            ("gen_len", "'32'"), ("gen_len", "[]"), ("prompt_len", "true")])
def test_a_bad_sweep_value_names_the_key(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + f"{key}: {value}\n")
    with pytest.raises(ConfigError, match=rf"{key}: expected a whole number or a list of distinct ones"):
        load_plan(path)


def test_publish_names_the_dashboard_directory_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    assert load_plan(path).publish is None
    path.write_text(BASE + f"publish: {tmp_path / 'site'}\n")
    assert load_plan(path).publish == tmp_path / "site"
    (tmp_path / "file").write_text("x")
    path.write_text(BASE + f"publish: {tmp_path / 'file' / 'site'}\n")
    with pytest.raises(ConfigError) as err:
        load_plan(path)
    assert "publish:" in str(err.value) and "is a file, not a directory" in str(err.value)


def test_bisect_keys(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    plain = load_plan(path)
    assert (plain.bisect, plain.repo, plain.bisect_budget) == (False, None, 8)
    path.write_text(BASE + f"bisect: true\nrepo: {tmp_path}\nbisect_budget: 3\n")
    found = load_plan(path)
    assert (found.bisect, found.repo, found.bisect_budget) == (True, tmp_path, 3)


@pytest.mark.parametrize(("text", "key", "says"), [
    ("bisect: yes please", "bisect", "expected true or false"),
    ("repo: /no/such/folder", "repo", "no such directory"),
    ("bisect_budget: 0", "bisect_budget", "expected a number of commits from 1 to 1000"),
    ("bisect_budget: true", "bisect_budget", "expected a number of commits"),
])
def test_bad_bisect_keys_name_the_key(tmp_path: Path, text: str, key: str, says: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE + text + "\n")
    with pytest.raises(ConfigError) as err:
        load_plan(path)
    assert str(err.value).startswith(f"{path}: {key}: ") and says in str(err.value)
def test_junit_names_a_file_the_night_can_write(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    assert load_plan(path).junit is None
    path.write_text(BASE + f"junit: {tmp_path / 'reports' / 'verdicts.xml'}\n")
    assert load_plan(path).junit == tmp_path / "reports" / "verdicts.xml"  # its folder is made by the night
    for bad, said in ((tmp_path, "is a directory; give a file name"),
                      (tmp_path / "plan.yaml" / "v.xml", "is a file, not a directory")):
        path.write_text(BASE + f"junit: {bad}\n")
        with pytest.raises(ConfigError) as err:
            load_plan(path)
        assert "junit:" in str(err.value) and said in str(err.value)


def test_the_confirmation_pools_up_to_run_abs_max_runs_unless_the_plan_bounds_it(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(BASE)
    assert load_plan(path).confirm_max_runs == UNTIL_CONFIDENT_MAX_RUNS == 80
    path.write_text(BASE + "confirm_max_runs: 20\n")
    assert load_plan(path).confirm_max_runs == 20
    for bad in ("0", "'20'", "true", "20001"):
        path.write_text(BASE + f"confirm_max_runs: {bad}\n")
        with pytest.raises(ConfigError) as err:
            load_plan(path)
        assert str(err.value).startswith(str(path)) and "confirm_max_runs: expected a number of runs a side" in str(
            err.value), err.value

"""`run --ab` and `nightly` on real LLM runs: the TTFT and decode tokens/s verdicts reach the table, the night's
JSON, Markdown and HTML, and the exit code follows them.

The device is `local` pinned to one core (verdicts/pinned.py), the runner on one thread; the model
configs/models/tiny_llama.py (`build`, 2 layers of dim 64) against `build_wide` (the same 2 layers at dim 128: a
slower decode whose export takes no longer than `build`'s, where `build_deep`'s 4 layers took twice as long).
Only what cannot flip by chance is asserted: which rows and fields are there, that the exit code is 1 exactly
when a verdict says regressed (end to end, a metric or an op), and that each ratio lies in its interval. Not even
that the larger model decodes slower: a clean-clone round had the 2-layer night wholly in a slow state and the
4-layer one in the fast state, a decode rate ratio of 1.13 (its interval [0.71, 1.23], `inconclusive`, as it
should be). Whether such a slowdown is always flagged is a rate: the statistic's power is measured on recorded
jobs (tests/unit/verdicts/test_states.py) and in benchmarks/bench_verdicts.py; per-op verdicts of
sub-microsecond ops are not the subject here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.app.baseline import series_point
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.series_clean import clean_enough
from tests.helpers.exports import export_ahead
from tests.integration.verdicts.pinned import REPO, etfarm, pinned_inventory

pytestmark = pytest.mark.slow

LLAMA = REPO / "configs" / "models" / "tiny_llama.py"
RUNS = 4
VERDICTS = ("REGRESSED", "improved", "unchanged", "inconclusive", "no-data")
AB = ("--runs", str(RUNS), "--iterations", "5", "--untraced-runs", "0", "--threads", "1", "--no-store")


def _rows(stdout: str) -> dict[str, str]:
    """The verdict table's rows: 'end to end', 'time to first token ...', 'decode tokens/s ...' -> verdict."""
    rows = {}
    for line in stdout.splitlines():
        for what in ("end to end", "time to first token (lower is better)", "decode tokens/s (higher is better)"):
            words = line.split(what, 1)[1].split() if what in line else []
            verdict = words[0].rstrip(";") if words else ""  # "inconclusive; too noisy: could see >= 6.8%"
            if verdict in VERDICTS:  # a table row, not the legend
                rows[what] = verdict
    return rows


def test_ab_gives_ttft_and_decode_verdicts_and_an_exit_code_that_follows_them(tmp_path: Path) -> None:
    inventory = pinned_inventory(tmp_path)
    export_ahead(f"{LLAMA}:build", f"{LLAMA}:build_wide")
    result = etfarm("run", "--config", str(inventory), "-d", "pinned", "--ab", f"{LLAMA}:build", f"{LLAMA}:build_wide",
                    *AB, "--once", "--out", str(tmp_path / "ab"))  # one job: what its verdicts say, not how many
    rows = _rows(result.stdout)
    assert set(rows) == {"end to end", "time to first token (lower is better)", "decode tokens/s (higher is better)"}, \
        result.stdout[:3000] + result.stderr[-3000:]
    # exit 1 exactly when the table says REGRESSED somewhere (end to end, a metric or an op)
    judged = 1 if "REGRESSED" in result.stdout else 3 if "could not judge" in result.stdout else 0
    assert result.returncode == judged, result.stdout[-3000:]
    decode = next(line for line in result.stdout.splitlines() if "decode tokens/s (higher is better)" in line)
    ratio = float(decode.split("x  [")[0].split()[-1])
    low, high = (float(x) for x in decode.split("x  [")[1].split("]")[0].split(","))
    assert low <= ratio <= high, decode


def test_nightly_llm_metrics_reach_the_json_and_pages_and_the_exit_code_follows_them(tmp_path: Path) -> None:
    """Three nights: the LLM, the same again (its metrics judged against the first night, and against the
    series), then twice the width under the same name (its page's LLM rows and sections)."""
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(yaml.safe_dump({"devices": {"pinned": {
        "transport": "local", "target": "host", "workdir": str(tmp_path / "work"), "exec_prefix": "taskset -c 1",
        "threads": 1}}}))
    report = tmp_path / "reports"
    env = {**os.environ, "ETFARM_STORE": str(tmp_path / "results.db")}

    def night(factory: str) -> tuple[subprocess.CompletedProcess[str], dict]:
        plan = tmp_path / "plan.yaml"
        plan.write_text(json.dumps({"devices": ["pinned"], "models": [{"spec": f"{LLAMA}:{factory}", "name": "llm"}],
                                    "runs": RUNS, "confirm_max_runs": 2 * RUNS, "iterations": 5, "warmup": 2, "threshold": "5%",
                                    "baseline": "last-good", "report": str(report), "config": str(inventory)}))
        done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "nightly", "--plan", str(plan), "-q"],
                              capture_output=True, text=True, timeout=1200, env=env, check=False)
        verdicts = json.loads(max(report.glob("nightly-*.json")).read_text())
        judged = 1 if verdicts["regressed"] else 3 if verdicts["could_not_judge"] else 0
        assert done.returncode == judged, done.stdout + done.stderr[-3000:]
        return done, verdicts

    first, first_json = night("build")
    first_id = first_json["pairs"][0]["source_b"]
    assert "no baseline yet" in first.stdout, first.stdout + first.stderr[-3000:]
    _, repeat = night("build")
    pair = repeat["pairs"][0]
    metrics = {m["metric"]: m for m in pair["metrics"]}
    assert set(metrics) == {"ttft", "decode_tokens_per_s"} and metrics["decode_tokens_per_s"]["higher_is_better"]
    assert metrics["decode_tokens_per_s"]["runs_a"] in (RUNS, 2 * RUNS)  # 2x: a confirmation that pooled a job
    # the series' reference is the baseline run, unless an interleaved confirmation (a pair the night's job could not
    # judge) settled the pair: its A side is then that job's rerun of the baseline's program
    settled = any(c["device"] == pair["device"] and c["model"] == pair["model_b"] for c in repeat.get("confirmations", []))
    # a night with under half its executions clean stands out of its series (series_clean.py): on a busy host the
    # first night may, and then there is no series to judge against yet
    if pair["series"] is None:  # the first night's own executions decide (after a confirmation, the pair's are its)
        first_night = series_point(RunRecord(report / "runs" / first_id), "pinned", "llm")
        assert clean_enough([first_night])[1], pair["contention"]
    else:
        assert pair["series"]["points"] == 2 and (settled or pair["series"]["reference_runs"] == [pair["source_a"]])

    _, deep = night("build_wide")  # the same name, twice the width
    latest = (report / "latest.md").read_text()
    decode = next(m for m in deep["pairs"][0]["metrics"] if m["metric"] == "decode_tokens_per_s")
    assert decode["ci_low"] <= decode["ratio"] <= decode["ci_high"]
    assert "| decode tokens/s (higher is better) | **" in latest, latest
    page = max(report.glob("nightly-*.html")).read_text()  # the one HTML of the night says the same
    assert "decode tokens/s (higher is better)" in page
    assert "LLMs: time to first token, tokens per second, memory · run " in page  # B's runs, their LLM sections

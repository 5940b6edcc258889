"""Issue 31: a comparison says what it compares. Real runs of tiny_mlp on the `local` device (2 process runs of
3 iterations), and a real run stopped by a real SIGINT part-way.

xnnpack A against portable B, or runs of other iterations and warmup, are named (the verdict cell, the legend,
the JSON's `settings_differ`, the A/B page) and judged `settings-differ`, never regressed or improved, exit 0;
an interrupted B is named `incomplete` in the table, legend and JSON. A nightly whose named baseline ran with
another backend says so too. No assertion depends on timing: with 2 runs a side no rank test can reject, and
what is checked is what the sides ran with and whether they are whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_honest_exits import start, wait_for
from tests.integration.verdicts.pinned import page_text

REPO = Path(__file__).resolve().parents[3]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
SMALL = ("--runs", "2", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0", "--no-store", "--no-report", "-q")


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env, check=False)


def inventory(path: Path, workdir: Path, exec_prefix: Path | None = None) -> Path:
    """One device, `board`: this host (behind `exec_prefix` when given)."""
    prefix = f"    exec_prefix: [{str(exec_prefix)!r}]\n" if exec_prefix else ""
    path.write_text(f"devices:\n  board:\n    transport: local\n    workdir: {workdir}\n{prefix}")
    return path


def interrupted(root: Path, out: Path, second_run: Path, *args: str) -> str:
    """`etfarm run --out OUT ARGS` on `board` with each process run starting a second late, stopped by SIGINT
    once `second_run` (a path under OUT) exists; its stdout."""
    slow = root / "slow.sh"
    slow.write_text('#!/bin/sh\nsleep 1\nexec "$@"\n')
    slow.chmod(0o755)
    job = start("run", "--config", str(inventory(root / "slow.yaml", root / "w-slow", slow)), "--devices", "board",
                "--iterations", "3", "--warmup", "1", "--untraced-runs", "0", "--no-store", "--no-report",
                "--out", str(out), *args)
    try:
        wait_for(out / second_run, job, timeout_s=300)
        job.send_signal(signal.SIGINT)
        stdout, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 130, stderr[-3000:]
    return stdout


def interrupted_run(root: Path) -> Path:
    """A run of 8 process runs stopped by SIGINT after its second."""
    out = root / "interrupted"
    interrupted(root, out, Path("board/tiny_mlp/run-2/etdump.etdp"), "--model", TINY, "--runs", "8")
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("unlike")
    devices = inventory(root / "devices.yaml", root / "work")
    made = {}
    for name, extra in (("base", ()), ("portable", ("--backend", "portable")),
                        ("longer", ("--iterations", "4", "--warmup", "2"))):
        made[name] = root / name
        result = etfarm("run", "--config", str(devices), "--devices", "board", "--model", TINY, *SMALL, *extra,
                        "--out", str(made[name]))
        assert result.returncode == 0, result.stderr[-3000:]
    made["interrupted"] = interrupted_run(root)
    made["inventory"] = devices
    return made


def compared(a: Path, b: Path, *extra: str) -> tuple[int, dict]:
    result = etfarm("compare", str(a), str(b), "--json", *extra)
    assert result.returncode in (0, 1, 3), result.stderr[-3000:]
    return result.returncode, json.loads(result.stdout)


def test_xnnpack_against_portable_is_named_and_never_regressed(runs: dict[str, Path], tmp_path: Path) -> None:
    code, data = compared(runs["base"], runs["portable"])
    (pair,) = data["pairs"]
    assert code == 0 and pair["verdict"] == "settings-differ" and not pair["regressed"]
    assert pair["settings_differ"] == [{"setting": "backend", "a": "xnnpack", "b": "portable"}]
    assert not {o["verdict"] for o in pair["ops"]} & {"regressed", "improved"}
    page = tmp_path / "ab.html"
    table = etfarm("compare", str(runs["base"]), str(runs["portable"]), "--html", str(page))
    assert table.returncode == 0, table.stderr[-3000:]
    row = next(line for line in table.stdout.splitlines() if line.startswith("board"))
    assert "settings-differ (backend)" in row and "REGRESSED" not in table.stdout
    assert "SETTINGS DIFFER, so those verdicts are settings-differ, not regressions: backend xnnpack (A) vs portable " \
           "(B) on board tiny_mlp" in table.stdout
    assert "board tiny_mlp: settings-differ" in page_text(page)
    assert "settings differ: backend xnnpack (A) vs portable (B)" in page_text(page)


def test_other_iterations_and_warmup_are_named(runs: dict[str, Path]) -> None:
    code, data = compared(runs["base"], runs["longer"])
    (pair,) = data["pairs"]
    assert code == 0 and pair["verdict"] == "settings-differ"
    assert pair["settings_differ"] == [{"setting": "iterations", "a": "3", "b": "4"},
                                       {"setting": "warmup", "a": "1", "b": "2"}]


def test_an_interrupted_b_is_named_incomplete(runs: dict[str, Path]) -> None:
    run_id = json.loads((runs["interrupted"] / "manifest.json").read_text())["run_id"]
    _, data = compared(runs["base"], runs["interrupted"])
    (pair,) = data["pairs"]
    assert pair["settings_differ"] == [] and pair["verdict"] != "settings-differ"  # same settings: judged
    (side,) = pair["incomplete"]
    assert side["side"] == "B" and side["source"] == run_id
    assert side["why"].startswith("its job was interrupted (Ctrl-C or SIGTERM): ") and " of 8 process runs" in side["why"]
    table = etfarm("compare", str(runs["base"]), str(runs["interrupted"]))
    row = next(line for line in table.stdout.splitlines() if line.startswith("board"))
    assert "(B incomplete)" in row
    assert f"INCOMPLETE side, its verdicts stand on the runs it has: B ({run_id}): its job was interrupted" in table.stdout


def test_a_nightly_against_a_named_baseline_of_another_backend_says_so(runs: dict[str, Path], tmp_path: Path) -> None:
    report = tmp_path / "reports"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"devices": ["board"], "models": [TINY], "runs": 2, "confirm_max_runs": 4, "iterations": 3, "warmup": 1,
                                "baseline": str(runs["portable"]), "report": str(report),
                                "config": str(runs["inventory"])}))
    night = etfarm("nightly", "--plan", str(plan), "-q", env={**os.environ, "ETFARM_STORE": str(tmp_path / "s.db")})
    assert night.returncode == 0, night.stdout + night.stderr[-3000:]
    (pair,) = json.loads(next(report.glob("nightly-*.json")).read_text())["pairs"]
    assert pair["verdict"] == "settings-differ"
    assert pair["settings_differ"] == [{"setting": "backend", "a": "portable", "b": "xnnpack"}]
    assert "SETTINGS DIFFER" in (report / "latest.md").read_text()


def test_ctrl_c_ends_ab_rounds_and_names_both_sides(tmp_path: Path) -> None:
    """`run --ab --until-confident` stopped by Ctrl-C in its first job starts no further round (2 runs a side
    are always inconclusive, so it would have), and its table names both sides incomplete."""
    other = tmp_path / "other" / "tiny_mlp.py"
    other.parent.mkdir()
    other.write_text(Path(TINY.rsplit(":", 1)[0]).read_text())
    out = tmp_path / "ab"
    stdout = interrupted(tmp_path, out, Path("board/tiny_mlp-a/run-2/etdump.etdp"), "--ab", TINY, f"{other}:build",
                         "--runs", "4", "--until-confident", "--max-runs", "16")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("ab")) == ["ab"]  # no ab-more1
    row = next(line for line in stdout.splitlines() if line.startswith("board"))
    assert "(A and B incomplete)" in row, stdout

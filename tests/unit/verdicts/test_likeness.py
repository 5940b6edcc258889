"""What a comparison compares: sides of different settings are named and never called regressed; a side
that is not whole (an interrupted job, a partial model) is named. Synthetic run directories, no ETDumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.base.codec import encode
from orchestrator.report.terminal.verdicts import verdict_markdown, verdict_table
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import compare_jobs
from orchestrator.verdicts.likeness import SETTINGS, SettingDifference, model_settings, side_gap
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.synthetic_run import make_run_dir

FAST = VerdictSettings(resamples=200)


def run_dir(root: Path, speed: float, edit: Any = None, **kw: Any) -> Path:
    """A one-device, one-model run (`pixel8`, `m0`) at `speed`, its manifest edited by `edit(dict)`."""
    made = make_run_dir(root, devices=("pixel8",), speed=[speed], runs=6, **kw)
    if edit is not None:
        manifest = json.loads((made / "manifest.json").read_text())
        edit(manifest)
        (made / "manifest.json").write_text(json.dumps(manifest))
    return made


def portable(manifest: dict[str, Any]) -> None:
    manifest["config"]["backend"] = "portable"
    for model in manifest["models"].values():
        model["backend"] = "portable"


def test_every_setting_is_named_and_read_from_the_job(tmp_path: Path) -> None:
    job = load_manifest(run_dir(tmp_path / "a", 1.0, iterations=20))
    settings = dict(model_settings(job, "m0"))
    assert list(settings) == list(SETTINGS) == ["backend", "recipe", "iterations", "warmup", "threads", "generation",
                                                "numerics", "runtime", "emulated"]
    assert settings["numerics"] == "off" and settings["runtime"] == "?"  # no device named: its runtime is unknown
    assert settings["recipe"] == "-"  # lowered without an export recipe
    assert settings["backend"] == "xnnpack" and settings["iterations"] == "20" and settings["threads"] == "default"


def test_another_backend_is_settings_differ_never_regressed(tmp_path: Path) -> None:
    a = run_dir(tmp_path / "a", 1.0)
    b = run_dir(tmp_path / "b", 15.6, portable, seed=1, run_id="20261122-000001-bbbb")
    comparison = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False)
    (pair,) = comparison.pairs
    assert pair.verdict is Verdict.SETTINGS_DIFFER and not pair.regressed and comparison.exit_code == 0
    assert pair.estimate is not None and pair.estimate.ratio > 10  # the ratio is still measured and shown
    assert pair.differences == (SettingDifference("backend", "xnnpack", "portable"),)
    assert encode(comparison)["pairs"][0]["settings_differ"] == [{"setting": "backend", "a": "xnnpack",
                                                                   "b": "portable"}]
    table = verdict_table(comparison)
    assert "settings-differ (backend)" in table and "REGRESSED" not in table
    assert "SETTINGS DIFFER" in table and "backend xnnpack (A) vs portable (B) on pixel8 m0" in table
    assert "settings-differ (backend)" in verdict_markdown(comparison)


def test_other_iterations_and_warmup_are_named_together(tmp_path: Path) -> None:
    def longer(manifest: dict[str, Any]) -> None:
        manifest["config"].update(iterations=40, warmup=7)

    a = run_dir(tmp_path / "a", 1.0)
    b = run_dir(tmp_path / "b", 2.0, longer, seed=1, run_id="20261122-000001-bbbb")
    (pair,) = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False).pairs
    assert pair.verdict is Verdict.SETTINGS_DIFFER
    assert [(d.setting, d.a, d.b) for d in pair.differences] == [("iterations", "20", "40"), ("warmup", "3", "7")]


def test_an_interrupted_b_is_named_and_keeps_its_verdict(tmp_path: Path) -> None:
    def interrupted(manifest: dict[str, Any]) -> None:
        manifest["status"] = "interrupted"
        model = manifest["devices"]["pixel8"]["models"]["m0"]
        model["status"] = "partial"
        model["runs"] = [r for r in model["runs"] if r["label"] not in ("run-5", "run-6")]

    a = run_dir(tmp_path / "a", 1.0)
    b = run_dir(tmp_path / "b", 1.0, interrupted, seed=1, run_id="20261122-000001-bbbb")
    comparison = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False)
    (pair,) = comparison.pairs
    assert pair.verdict in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE) and not pair.differences
    (side,) = pair.incomplete
    assert (side.side, side.source) == ("B", "20261122-000001-bbbb")
    assert side.why == "its job was interrupted (Ctrl-C or SIGTERM): 4 of 6 process runs"
    assert encode(comparison)["pairs"][0]["incomplete"] == [encode(side)]
    table = verdict_table(comparison)
    assert "(B incomplete)" in table and f"INCOMPLETE side, its verdicts stand on the runs it has: {side.describe()}" \
        in table


def test_a_whole_side_has_no_gap_and_a_partial_model_has_one(tmp_path: Path) -> None:
    def partial(manifest: dict[str, Any]) -> None:
        model = manifest["devices"]["pixel8"]["models"]["m0"]
        model["status"] = "partial"
        model["runs"] = model["runs"][1:]

    assert side_gap(load_manifest(run_dir(tmp_path / "a", 1.0)), "pixel8", "m0") is None
    assert side_gap(load_manifest(run_dir(tmp_path / "b", 1.0, partial)), "pixel8", "m0") == "partial: 5 of 6 process runs"

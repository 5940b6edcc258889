"""`compare` per configuration: a quantized model whose accuracy dropped exits 1 with its own verdict, whatever its
latency did; another recipe is settings-differ, and its accuracy is not judged. Synthetic run directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.base.codec import encode
from orchestrator.report.terminal.verdicts import verdict_markdown, verdict_table
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import compare_jobs
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.synthetic_run import make_run_dir

FAST = VerdictSettings(resamples=200)


def quantized(snr: float, recipe: str = "int8-static") -> Any:
    def edit(manifest: dict[str, Any]) -> None:
        for model in manifest["models"].values():
            model["recipe"] = {"text": recipe, "label": recipe, "name": recipe, "quantized": True,
                               "calibration_batches": 1, "calibration": "example inputs"}
        manifest["devices"]["pixel8"]["models"]["m0"]["accuracy"] = {
            "snr_db": snr, "max_abs_error": 0.01, "cosine": 0.99, "top1_agreement": 1.0, "top1_rows": 1, "runs": 6}
    return edit


def run_dir(root: Path, edit: Any, **kw: Any) -> Path:
    made = make_run_dir(root, devices=("pixel8",), speed=[1.0], runs=6, **kw)
    manifest = json.loads((made / "manifest.json").read_text())
    edit(manifest)
    (made / "manifest.json").write_text(json.dumps(manifest))
    return made


def test_an_accuracy_drop_fails_the_comparison_with_its_own_verdict(tmp_path: Path) -> None:
    a = run_dir(tmp_path / "a", quantized(40.0))
    b = run_dir(tmp_path / "b", quantized(25.0), seed=1, run_id="20261122-000001-bbbb")
    comparison = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False)
    (pair,) = comparison.pairs
    assert pair.verdict is not Verdict.REGRESSED and pair.accuracy_dropped and comparison.exit_code == 1
    assert encode(comparison)["pairs"][0]["accuracy"]["dropped"] is True
    table = verdict_table(comparison)
    assert "ACCURACY-DROPPED" in table and "SNR 40.0 dB -> 25.0 dB (down 15.0 dB, beyond 3 dB)" in table
    assert "ACCURACY-DROPPED" in verdict_markdown(comparison)

    held = compare_jobs(RunRecord(a), RunRecord(run_dir(tmp_path / "c", quantized(39.0), seed=2, run_id="20261122-000002-cccc")), FAST,
                        per_op=False)
    assert not held.accuracy_dropped and held.exit_code == 0 and "accuracy held" in verdict_table(held)


def test_another_recipe_is_settings_differ_and_its_accuracy_not_judged(tmp_path: Path) -> None:
    a = run_dir(tmp_path / "a", quantized(40.0, "int8-static"))
    b = run_dir(tmp_path / "b", quantized(20.0, "int8-dynamic"), seed=1, run_id="20261122-000001-bbbb")
    (pair,) = compare_jobs(RunRecord(a), RunRecord(b), FAST, per_op=False).pairs
    assert pair.verdict is Verdict.SETTINGS_DIFFER and pair.accuracy is None
    assert [(d.setting, d.a, d.b) for d in pair.differences] == [("recipe", "int8-static", "int8-dynamic")]

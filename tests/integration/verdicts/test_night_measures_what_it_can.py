"""Issue 31: one bad model does not lose the night; a bad plan is still refused before anything runs.

Real `etfarm nightly` on the `local` device with real exports and runs (tiny_mlp, portable, 2 process runs of 3
iterations) and a real results store. A model whose factory raises is that model's failure: the other model
is measured, stored and judged, the failed one is `no-data` with the exporter's reason in one line in the
night's stdout, JSON and page, and the night exits 3. A night none of whose models exports still writes its
page and exits 3. A model spec naming a file that does not exist is a plan error: exit 2, nothing run.
Nothing here depends on timing: the first night's verdicts are `new` and `no-data`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.integration.verdicts.pinned import page_text

REPO = Path(__file__).resolve().parents[3]
TINY = REPO / "configs" / "models" / "tiny_mlp.py"
REASON = "RuntimeError: weights file missing: /data/w.bin"


def etfarm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env, check=False)


def night(tmp_path: Path, name: str, models: list[str], report: Path) -> Path:
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(f"devices:\n  board:\n    transport: local\n    workdir: {tmp_path / 'work'}\n")
    plan = tmp_path / name
    plan.write_text(json.dumps({"devices": ["board"], "models": models, "backend": "portable", "runs": 2, "confirm_max_runs": 4,
                                "iterations": 3, "warmup": 1, "report": str(report), "config": str(inventory)}))
    return plan


def test_a_model_that_cannot_export_loses_only_itself(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(f"def build():\n    raise RuntimeError({REASON.split(': ', 1)[1]!r})\n")
    env = {**os.environ, "ETFARM_STORE": str(tmp_path / "results.db")}
    report = tmp_path / "reports"
    result = etfarm("nightly", "--plan", str(night(tmp_path, "plan.json", [f"{TINY}:build", f"{bad}:build"], report)),
                    "-q", env=env)
    assert result.returncode == 3, result.stdout + result.stderr[-3000:]
    said = f"model bad ({bad}:build, portable) NOT MEASURED: model spec '{bad}:build': factory build() raised {REASON}"
    assert said in result.stdout.splitlines(), result.stdout

    (run_dir,) = (report / "runs").iterdir()  # the good model's job, without the bad one
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert list(manifest["models"]) == ["tiny_mlp"] and manifest["status"] == "ok"
    stored = json.loads(etfarm("history", "--json", env=env).stdout)
    assert [(r["run_id"], r["models"]) for r in stored] == [(manifest["run_id"], ["tiny_mlp"])]

    verdicts = json.loads((report / f"nightly-{manifest['run_id']}.json").read_text())
    pairs = {p["model_b"]: p for p in verdicts["pairs"]}
    assert pairs["tiny_mlp"]["verdict"] == "new"
    assert pairs["bad"]["verdict"] == "no-data" and pairs["bad"]["blame"] == "usage"
    assert pairs["bad"]["reason"] == f"not exported (portable): model spec '{bad}:build': factory build() raised {REASON}"
    text = page_text(report / f"nightly-{manifest['run_id']}.html")
    assert "board tiny_mlp: new" in text and "board bad: no-data not exported (portable): model spec" in text
    assert said in text  # and among the night's notes


def test_a_night_with_no_model_that_exports_still_reports(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def build(:\n")  # a syntax error: the model's own failure, not the plan's
    env = {**os.environ, "ETFARM_STORE": str(tmp_path / "results.db")}
    report = tmp_path / "reports"
    result = etfarm("nightly", "--plan", str(night(tmp_path, "plan.json", [f"{broken}:build"], report)), "-q", env=env)
    assert result.returncode == 3, result.stdout + result.stderr[-3000:]
    assert "Traceback" not in result.stderr and not (report / "runs").exists()
    (written,) = report.glob("nightly-*.json")
    (pair,) = json.loads(written.read_text())["pairs"]
    assert pair["verdict"] == "no-data" and pair["reason"].startswith("not exported (portable): ")
    assert "SyntaxError" in pair["reason"] and "\n" not in pair["reason"]
    assert written.with_suffix(".html").is_file() and (report / "latest.md").is_file()


def test_a_plan_naming_a_file_that_does_not_exist_runs_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "ETFARM_STORE": str(tmp_path / "results.db")}
    report = tmp_path / "reports"
    gone = tmp_path / "gone.py"
    result = etfarm("nightly", "--plan", str(night(tmp_path, "plan.json", [f"{TINY}:build", f"{gone}:build"], report)),
                    env=env)
    assert result.returncode == 2, result.stdout + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert errors == [f"error: {tmp_path / 'plan.json'}: models: model spec '{gone}:build': {gone}: no such file"]
    assert not report.exists()  # no run directory, no page: refused before anything ran

"""Issue 35 items 1, 3 and 4: a site is published only into a new or empty folder or over a site of this store, a plan
whose report folder is its own folder (`report: .`) publishes, and the site links only to what is inside it.

Real files: a real run directory (tiny_mlp on `local`) as the target, a real night of `etfarm nightly` run from its
plan's folder with `report: .`, published again from another folder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.report.dashboard.target import refusal

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
FAST = ("--backend", "portable", "--runs", "1", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0")


def etfarm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
    return lines[0]


def files_of(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_run_directory_as_the_publish_target_is_refused_and_the_run_stays_whole(tmp_path: Path) -> None:
    run, store = tmp_path / "run", tmp_path / "s.db"
    made = etfarm("run", "--model", TINY, *FAST, "--store", str(store), "--no-report", "--out", str(run))
    assert made.returncode == 0, made.stderr[-3000:]
    before = files_of(run)
    line = one_error(etfarm("publish", "--out", str(run), "--store", str(store)))
    assert line.startswith(f"error: --out {run}: it holds a manifest.json that no etfarm site wrote (a run directory?)")
    assert files_of(run) == before
    report = etfarm("report", str(run), "--output", str(tmp_path / "r.md"))
    assert report.returncode == 0, report.stderr[-2000:]
    # the same store into a folder of its own: published, and published over again
    assert etfarm("publish", "--out", str(tmp_path / "site"), "--store", str(store)).returncode == 0
    again = etfarm("publish", "--out", str(tmp_path / "site"), "--store", str(store))
    assert again.returncode == 0 and "(0 read now)" in again.stdout


def test_a_folder_of_other_files_and_the_root_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("mine")
    line = one_error(etfarm("publish", "--out", str(tmp_path / "home"), "--store", str(tmp_path / "s.db")))
    assert "it is not empty and holds no site of this store" in line
    assert [p.name for p in (tmp_path / "home").iterdir()] == ["notes.txt"]
    assert refusal(Path("/"), tmp_path / "s.db") is not None  # `publish: /` as root wrote a site into /
    assert refusal(tmp_path / "new", tmp_path / "s.db") is None
    (tmp_path / "empty").mkdir()
    assert refusal(tmp_path / "empty", tmp_path / "s.db") is None


PLAN = f"""devices: [local]
models: ["{TINY}"]
backend: portable
runs: 1
confirm_max_runs: 2
iterations: 3
warmup: 1
report: .
out: runs
publish: site
"""


def test_a_night_with_report_dot_publishes_a_site_whose_night_links_stay_inside_it(tmp_path: Path) -> None:
    night_dir, store = tmp_path / "night", tmp_path / "s.db"
    night_dir.mkdir()
    (night_dir / "plan.yaml").write_text(PLAN)
    night = etfarm("nightly", "--plan", "plan.yaml", "--store", str(store), cwd=night_dir)
    assert night.returncode == 0, night.stderr[-3000:]
    assert "warning" not in night.stderr and "published 1 series" in night.stdout
    (run,) = (night_dir / "runs").iterdir()
    recorded = json.loads((run / "night.json").read_text())
    assert Path(recorded["page"]).is_absolute() and Path(recorded["page"]).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = etfarm("publish", "--out", str(night_dir / "site"), "--store", str(store), cwd=elsewhere)
    assert again.returncode == 0, again.stderr[-2000:]
    site = night_dir / "site"
    for page in site.rglob("*.html"):
        for href in re.findall(r'href="([^"#]+)"', page.read_text()):
            if href.startswith("data:"):  # an empty favicon, inline
                continue
            target = (page.parent / href).resolve()
            assert site.resolve() in target.parents and target.is_file(), (page, href)
    (copy,) = (site / "nights").iterdir()
    assert copy.read_bytes() == Path(recorded["page"]).read_bytes()


def test_a_plan_publishing_into_its_report_folder_is_refused_before_the_night(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN.replace("publish: site", "publish: ."))
    line = one_error(etfarm("nightly", "--plan", "plan.yaml", "--store", str(tmp_path / "s.db"), cwd=tmp_path))
    assert line == ("error: plan.yaml: publish: .: the night writes its report folder . there; publish the site into "
                    "a folder of its own")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("target", ["run", "notes"])
def test_a_plans_publish_folder_that_is_not_a_site_is_refused_before_the_night(tmp_path: Path, target: str) -> None:
    (tmp_path / target).mkdir()
    (tmp_path / target / ("manifest.json" if target == "run" else "notes.txt")).write_text("{}")
    (tmp_path / "plan.yaml").write_text(PLAN.replace("publish: site", f"publish: {target}").replace("report: .",
                                                                                                   "report: r"))
    line = one_error(etfarm("nightly", "--plan", "plan.yaml", "--store", str(tmp_path / "s.db"), cwd=tmp_path))
    assert line.startswith(f"error: plan.yaml: publish: {target}: it ")
    assert not (tmp_path / "r").exists()

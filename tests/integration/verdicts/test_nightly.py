"""`etfarm nightly` end to end on the testbed: an SSH device pinned to one core, a real store.

First night passes (no baseline: `new`); a repeat of the same model passes; the same model file edited to four
times the width and 8 more layers (over 5x the time) exits 1 with the regression named in the report; a night whose
device is unreachable exits 3 (no regression found, something not measured). Each night writes ONE HTML page (the
confirmation job folded in), checked in headless Chromium: the regressed night opens with `regressed`, the ratio,
the baseline run and `confirmed`; the repeat names no winner. The same A/B page comes from `compare A B --html` and
`report B --against A`.

Verdicts asserted on one real job each, with the default statistic: the repeat is not regressed (0 of 1560 ordered
pairs of recorded identical jobs were, 1 of 3000 synthetic pairs of the fitted process model), and the edit is
regressed and confirmed. Not a mere 2x: the testbed's speed states form a ladder (1, 1.4, 2x), so a 2x model in its
fast state runs at the speed of a baseline process in the 2x state, and in about 1 pair of 700 (synthetic, 6-10
runs) the statistic reads that as a possibly missed state and says `inconclusive`, as it should; a clean-clone
round met one. Over 5x lies beyond every state of a baseline. The slowdown is mostly width (48 layers 256 wide
against 40 layers 64 wide: 5-17x here) because an export's time grows with the layers, not their width: four times the depth
took five times as long to export. The rates themselves are the benchmarks' (bench_series.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.report.formats import ratio
from orchestrator.results.verdicts_file import recorded_pairs
from tests.helpers.exports import export_ahead
from tests.helpers.inventory import write_inventory
from tests.integration.verdicts.pinned import page_text

RUNS = 6
SCREENSHOT_KEEP = "ETFARM_NIGHTLY_SCREENSHOT"  # copy the regressed night's screenshot there, to look at it

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO / "configs" / "models" / "deep_mlp.py"


def etfarm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env, check=False)


def write_plan(path: Path, devices: list[str], model: Path, report: Path, inventory: Path, **extra: str) -> Path:
    path.write_text(json.dumps({"devices": devices, "models": [f"{model}:build"], "runs": RUNS, "confirm_max_runs": 2 * RUNS, "iterations": 10,
                                "warmup": 3, "threshold": "5%", "baseline": "last-good", "report": str(report),
                                "config": str(inventory), **extra}))
    return path


@pytest.mark.slow
def test_nightly_first_repeat_slowed_unreachable(tmp_path: Path, sshd_host: object,
                                                 ssh_server_factory: Callable[[], object]) -> None:
    pinned = sshd_host.spec("pinned", tmp_path / "pinned-workdir", exec_prefix=("taskset", "-c", "1"))  # type: ignore[attr-defined]
    dead_host = ssh_server_factory()
    dead = dead_host.spec("gone", tmp_path / "gone-workdir")  # type: ignore[attr-defined]
    dead_host.stop()  # type: ignore[attr-defined]
    inventory = write_inventory(tmp_path / "devices.yaml", [pinned, dead])
    model = tmp_path / "models" / "mlp.py"  # the nightly's model file, edited and committed between nights
    model.parent.mkdir()
    first_commit = commit(model, MODEL.read_text())
    export_ahead(f"{model}:build")
    report = tmp_path / "reports"
    site = tmp_path / "site"  # the dashboard, published after every night (the plan's `publish:`)
    plan = write_plan(tmp_path / "plan.yaml", ["pinned"], model, report, inventory, publish=str(site))
    env = {**os.environ, "ETFARM_STORE": str(tmp_path / "results.db")}

    first = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert "new" in first.stdout and "no baseline yet" in first.stdout
    (html,) = report.glob("nightly-*.html")  # the night's HTML report beside its verdicts
    assert "Which device is fast enough?" in html.read_text() and f"report: {html}" in first.stdout
    for run_dir in (report / "runs").iterdir():  # named by the job's run id
        assert json.loads((run_dir / "manifest.json").read_text())["run_id"] == run_dir.name

    repeat = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    verdicts = json.loads(max(report.glob("nightly-*.json")).read_text())
    # a night it could not judge exits 3, never green (issue 37): the pair, or its series (a series of one or two jobs,
    # widened by the job shift until its floor, may not judge a night its interleaved confirmation found unchanged)
    assert not verdicts["regressed"]
    assert repeat.returncode == (3 if verdicts["could_not_judge"] else 0), repeat.stdout + repeat.stderr[-3000:]
    assert verdicts["could_not_judge"] == (verdicts["pairs"][0]["verdict"] == "inconclusive" or (
        verdicts["pairs"][0]["series"] is not None and verdicts["pairs"][0]["series"]["verdict"] == "inconclusive"))
    assert verdicts["pairs"][0]["verdict"] in {"unchanged", "inconclusive", "improved"}
    assert verdicts["pairs"][0]["estimate"]["runs_a"] in (RUNS, 2 * RUNS)  # 2x: a confirmation that pooled a job
    first_pair = verdicts["pairs"][0]  # settled by an interleaved confirmation (its own job could not judge it): its
    settled = any(c["device"] == first_pair["device"] and c["model"] == first_pair["model_b"]  # A is that job's rerun
                  for c in verdicts.get("confirmations", []))
    # a night with under half its executions clean stands out of its series (series_clean.py): then no series yet
    busy = any(s is not None and s["share"] >= 0.5 for s in first_pair["contention"].values() if isinstance(s, dict))
    assert (busy and first_pair["series"] is None) or settled or \
        first_pair["series"]["reference_runs"] == [first_pair["source_a"]]
    # noise_floor defaults to auto: one good stored night is too short a history, and the report says so
    assert verdicts["settings"]["auto_noise_floor"] is True and verdicts["pairs"][0]["threshold"] == 0.05
    assert verdicts["pairs"][0]["noise_floor"] == {"floor": None, "source": "auto", "stored_runs": 1,
                                                   "min_stored_runs": 6, "coverage": 0.95, "method": "replicates",
                                                   "replicate_groups": 0}
    assert "none (1 of 6 runs)" in (report / "latest.md").read_text()
    repeat_id = verdicts["b"].split("+")[0]  # the night's own job (a later night's last good, not its confirmation)
    first_id = json.loads(min(report.glob("nightly-*.json")).read_text())["b"].split("+")[0]
    # the later nights' last good (app/baseline.py): the repeat, unless its own job is recorded regressed (it stays so
    # when its interleaved confirmation cleared it: a busy host's false alarm) or left inconclusive; then the first
    # night. Read from what the repeat's own job recorded beside it, not guessed from the night's settled verdict.
    (recorded,) = [p for p in recorded_pairs(report / "runs" / repeat_id) if (p.device, p.model_b) == ("pinned", "mlp")]
    passed_over = recorded.regressed or recorded.verification_failed or recorded.verdict == "inconclusive"
    assert passed_over or recorded.verdict == verdicts["pairs"][0]["verdict"], (recorded, verdicts["pairs"][0])
    baseline_id = first_id if passed_over else repeat_id
    night_page = report / f"nightly-{verdicts['b'].split('+')[0]}.html"
    # named as the page names a pair: "mlp-baseline -> mlp" when an interleaved confirmation judged it
    shown = first_pair["model_b"] if first_pair["model_a"] == first_pair["model_b"] else \
        f"{first_pair['model_a']} -> {first_pair['model_b']}"
    assert f"pinned {shown}: {first_pair['verdict']}" in page_text(night_page)
    assert 'class="badge good">fastest<' not in night_page.read_text()  # no winner named

    slowed = MODEL.read_text().replace("WIDTH = 64", "WIDTH = 256").replace("DEPTH = 40", "DEPTH = 48")
    slowed_commit = commit(model, slowed)
    export_ahead(f"{model}:build")
    slowed = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert slowed.returncode == 1, slowed.stdout + slowed.stderr[-3000:]
    latest = (report / "latest.md").read_text()
    assert "| pinned | mlp-baseline -\\> mlp | **⛔ regressed** |" in latest  # the interleaved job's pair
    assert "REGRESSED" in slowed.stdout
    # one number for the night's ratio (the interleaved confirmation's) in its JSON, the terminal and its page
    night_ratio = json.loads(max(report.glob("nightly-*.json")).read_text())["pairs"][0]["estimate"]["ratio"]
    shown = re.search(r"end to end +REGRESSED(?: \([^)]*\))? +\S+ +\S+ +(\d+\.\d+)x", slowed.stdout)  # (states may differ)
    assert shown and abs(float(shown.group(1)) - night_ratio) <= 5e-4 * night_ratio, (night_ratio, slowed.stdout[:2000])
    assert f"regressed {ratio(night_ratio)} slower" in page_text(max(report.glob("nightly-*.html")))
    # A regression is run again at once and must show again (a whole job in a slow state would not).
    # (the night's own job may also find it not judged, too noisy or under a different load: the same confirmation)
    assert re.search(r"(regressed|not judged \(.+\)) in run", latest), latest
    assert "confirmed by run" in latest and "NOT confirmed" not in latest
    slowed_jobs = len(json.loads(max(report.glob("nightly-*.json")).read_text())["b"].split("+"))
    assert slowed_jobs in (2, 3) and slowed.stdout.count("run directory: ") == slowed_jobs  # a confirmation may pool
    interleaved = _the_confirmation_interleaves_both_programs(report, baseline_id)
    _the_regressed_page_in_chromium(report, tmp_path, interleaved)
    # the night's job and its confirmation; the baseline's program re-run in it is no series of its own (a busy
    # repeat night may have run a confirmation of its own: one more stored run)
    stored = 1 + len(verdicts["b"].split("+")) + slowed_jobs
    assert f"published 1 series from {stored} stored runs ({slowed_jobs} read now)" in slowed.stdout, slowed.stdout[-2000:]
    _the_dashboard_in_chromium(site, report, tmp_path, first_commit, slowed_commit)
    _the_ab_page_is_one_page(report, tmp_path, baseline_id, env)

    # A pinned series reference that names no run is refused before anything runs.
    write_plan(plan, ["pinned"], model, report, inventory, reference="no-such-run")
    refused = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert refused.returncode == 2 and "reference 'no-such-run': neither a run directory nor a stored run id" in \
        refused.stderr, refused.stderr

    # The fix lands: the regressed night is never a baseline, so pinned is compared with the last good
    # one again, and with the series reference the plan pins (the first night); the device `gone` cannot be
    # reached: nothing regressed, something not measured.
    write_plan(plan, ["pinned", "gone"], model, report, inventory, reference=first_id, publish=str(site))
    commit(model, MODEL.read_text())
    unreachable = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert unreachable.returncode == 3, unreachable.stdout + unreachable.stderr[-3000:]
    assert "gone: NOT MEASURED (infrastructure)" in unreachable.stdout
    latest = (report / "latest.md").read_text()
    assert "| gone | mlp | **⛔ no-data** |" in latest
    assert "| pinned | mlp | **⛔ regressed** |" not in latest
    last = json.loads(max(report.glob("nightly-*.json")).read_text())
    pinned = next(p for p in last["pairs"] if p["device"] == "pinned")
    again = [c for c in last["confirmations"] if c["device"] == "pinned"]  # a false alarm of this busy host, if any
    if not again:
        assert pinned["source_a"] == baseline_id  # the last good night, not the regressed one
        assert pinned["series"]["reference_runs"] == [first_id] and "the pinned run" in pinned["series"]["reference"]
    else:  # its confirmation interleaved the last good nights' program (the baseline's or the series reference's, the
        # first night's or the repeat's: one program), not the regressed one's, and cleared it
        named = re.search(r"program from run (\S+?)(, 2 jobs pooled)?$", again[0]["how"])
        assert named is not None and pinned["verdict"] != "regressed", again[0]["how"]
        assert _program_key(report, named.group(1)) == _program_key(report, first_id), again[0]["how"]
    # The dashboard now has the unreachable device's series too; the regressed one, which moved, stays first.
    rows = re.findall(r'<tr data-series="([^"]+)"[^>]*data-device="([^"]+)"[^>]*data-verdict="([^"]+)"',
                      (site / "index.html").read_text())
    assert [(device, verdict) for _, device, verdict in rows][1:] == [("gone", "no-data")] and rows[0][1] == "pinned"
    from testbed.chromium import visit_file

    filtered = visit_file(site / "index.html", tmp_path / "chromium-filter", window=(1280, 700), fragment="device=gone")
    shown = re.findall(r'<tr data-series="[^"]+"[^>]*data-device="([^"]+)"[^>]*?( style="display: none;")?>', filtered.dom)
    assert shown == [("pinned", ' style="display: none;"'), ("gone", "")] and 'id="shown">1<' in filtered.dom
    assert filtered.requests == [] and filtered.console == []


def commit(model: Path, text: str) -> str:
    """The model file written and committed in its own git repository (the store keeps each night's commit)."""
    model.write_text(text)
    git = ["git", "-C", str(model.parent), "-c", "user.name=etfarm", "-c", "user.email=etfarm@example.invalid"]
    if not (model.parent / ".git").is_dir():
        subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", model.name], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "night"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def _the_dashboard_in_chromium(site: Path, report: Path, work: Path, before: str, regressed_at: str) -> None:
    """The site the plan's `publish:` wrote after the third night, opened from the file system with every network
    request refused: the index names the series regressed and confirmed; its page marks the third night (its first
    job, not the confirmation) as a confirmed regression between the second night's commit and the third's, draws
    its charts with the bundled plotly.js, and links each night to the night's page."""
    import shutil

    from testbed.chromium import visit_file

    nights = sorted(report.glob("nightly-*.json"))
    third = json.loads(nights[-1].read_text())
    first_run, confirm_run = third["confirmations"][0]["first_run"], third["confirmations"][0]["confirm_run"]
    for run_id in (first_run, confirm_run):
        assert json.loads((report / "runs" / run_id / "night.json").read_text())["night"] == nights[-1].stem.removeprefix(
            "nightly-")
    index = visit_file(site / "index.html", work / "chromium-index", window=(1280, 900))
    assert index.requests == [] and index.console == [], (index.requests, index.console)
    rows = re.findall(r'<tr data-series="([^"]+)"[^>]*data-device="pinned"[^>]*data-verdict="([^"]+)"', index.dom)
    assert [verdict for _, verdict in rows] == ["regressed"] and re.search(r'class="badge bad"[^>]*>confirmed<', index.dom)
    page = site / "series" / f"{rows[0][0]}.html"
    seen = visit_file(page, work / "chromium-series")
    if os.environ.get(SCREENSHOT_KEEP):
        shutil.copy(seen.screenshot, Path(os.environ[SCREENSHOT_KEEP]).with_name("dashboard-series.png"))
    assert seen.requests == [] and seen.console == [], (seen.requests, seen.console)
    assert seen.dom.count('class="main-svg"') >= 2  # plotly drew the charts, from DIR/assets/plotly.min.js
    assert seen.screenshot.stat().st_size > 50_000
    text = " ".join(re.sub(r"<[^>]+>", " ", seen.dom[:seen.dom.index('id="latency"')]).split())
    regressions = text[text.index("Regressions"):text.index("Change points")]
    assert f"{first_run} (" in regressions and confirm_run not in regressions
    # the night's ratio, as its JSON, its page and the terminal give it (the interleaved confirmation's), not its first job's
    said = ratio(third["pairs"][0]["estimate"]["ratio"])
    assert f"commit {before[:12]}..{regressed_at[:12]}): regressed {said}," in regressions, (said, regressions)
    assert "confirmed regression" in regressions
    links = dict(re.findall(r'<a href="([^"]+)">([^<]+)</a>', seen.dom[seen.dom.index("<h2>Nights</h2>"):]))
    night_page = next(href for href, run in links.items() if run == first_run)
    # the night's page copied into the site (the site holds what it links to), as its report folder has it
    copy = (page.parent / night_page).resolve()
    assert site.resolve() in copy.parents and copy.read_bytes() == nights[-1].with_suffix(".html").read_bytes()


def _program_key(report: Path, run: str) -> str:
    """The export key of the nightly model `mlp` in a stored night's run directory."""
    return json.loads((report / "runs" / run / "manifest.json").read_text())["models"]["mlp"]["key"]


def _the_confirmation_interleaves_both_programs(report: Path, baseline: str) -> str:
    """The confirmation job ran the baseline night's program (from the export cache, by its key) and the new one
    A B B A on the device, and the night's verdict for the pair is that job's. Returns the run whose program it
    interleaved (the baseline, or the series' reference: the first night or the repeat, one program)."""
    night = json.loads(max(report.glob("nightly-*.json")).read_text())
    (confirmation,) = night["confirmations"]
    confirm_run = confirmation["confirm_run"]
    # the baseline's program, or where the night's series said regressed too (a noisy host) the series' reference's,
    # the newest job before the step (the first night or the repeat: the same program); a confirmation still
    # inconclusive pools one more job
    how = re.fullmatch(r"interleaved A B B A with (the baseline|the series' reference)'s program from run (\S+?)"
                       r"(, 2 jobs pooled)?", confirmation["how"])
    assert how is not None, confirmation["how"]
    assert how.group(2) == baseline or how.group(1) == "the series' reference", confirmation["how"]
    held = json.loads((report / "runs" / confirm_run / "manifest.json").read_text())
    base = json.loads((report / "runs" / how.group(2) / "manifest.json").read_text())
    assert base["models"]["mlp"]["key"] == _program_key(report, baseline), confirmation["how"]  # one program
    models = held["models"]
    assert set(models) == {"mlp-baseline", "mlp"} and held["config"]["order"] == "abba"
    assert models["mlp-baseline"]["spec"] == base["models"]["mlp"]["pte"]  # the baseline's very program
    assert models["mlp"]["key"] != base["models"]["mlp"]["key"]  # and the new one, exported from the changed file
    for ran in held["devices"]["pinned"]["models"].values():  # every traced run of both, on the one device
        assert [r["label"] for r in ran["runs"] if r["label"].startswith("run-")] == [f"run-{k}" for k in range(1, RUNS + 1)]
    (pair,) = night["pairs"]
    assert (pair["model_a"], pair["model_b"], pair["source_a"], pair["source_b"]) == \
        ("mlp-baseline", "mlp", confirm_run, confirm_run)
    assert pair["verdict"] == "regressed" and pair["estimate"]["runs_a"] == pair["estimate"]["runs_b"] in (RUNS, 2 * RUNS)
    return how.group(2)


def _the_regressed_page_in_chromium(report: Path, work: Path, interleaved: str) -> None:
    """Three nights, three HTML pages (the confirmation job has none of its own); the regressed one, rendered by
    headless Chromium offline, opens with the verdict, the ratio, the baseline run and the confirmation."""
    import re
    import shutil

    from testbed.chromium import visit

    pages = sorted(report.glob("nightly-*.html"))
    assert len(pages) == 3, pages
    night = json.loads(pages[-1].with_suffix(".json").read_text())
    assert night["confirmations"][0]["confirmed"] is True
    page = visit(pages[-1], work / "chromium", window=(1400, 2400))
    if os.environ.get(SCREENSHOT_KEEP):
        shutil.copy(page.screenshot, os.environ[SCREENSHOT_KEEP])
    assert page.probe["fetched"] == [] and page.console == [] and page.probe_logged
    assert page.screenshot.stat().st_size > 50_000 and page.probe["width"] <= 1400
    assert page.probe["wide_tables"] == []  # every table fits a 1400 px window: none scrolls sideways
    assert page.probe["headings"][:2] == ["Verdicts", "Per-op verdicts"]
    text = page_text(pages[-1])
    opening = text[text.index("Verdicts"):text.index("Per-op verdicts")]
    found = re.search(r"pinned mlp-baseline -> mlp: regressed (\d+\.\d+)x slower than baseline (\S+) "
                      r"\[(\d+\.\d+), (\d+\.\d+)\]", opening)
    assert found, opening
    # the night's verdict is the interleaved job's: its baseline side is the confirmation job, run beside the new one
    assert float(found.group(1)) > 1.5 and float(found.group(3)) > 1.05
    assert found.group(2) == night["confirmations"][0]["confirm_run"] and f"program from run {interleaved}" in opening
    assert f"confirmed by run {night['confirmations'][0]['confirm_run']}" in opening
    assert "Fully Connected (NC, F32) GEMM 40 48 +8 (1.20x)" in text  # the structure diff: 8 more layers


def _the_ab_page_is_one_page(report: Path, work: Path, baseline: str, env: dict[str, str]) -> None:
    """`compare A B --html F` and `report B --against A -o F` write the same page, byte for byte."""
    night = json.loads(max(report.glob("nightly-*.json")).read_text())
    a, b = report / "runs" / baseline, report / "runs" / night["b"].split("+")[0]
    first, second = work / "compare.html", work / "against.html"
    compared = etfarm("compare", str(a), str(b), "--html", str(first), env=env)
    # two separate jobs: a busy hour may leave them under different load (the longer program is preempted more),
    # which holds the latency verdict back (exit 3, or 1 on the memory it grew); never unchanged (0)
    assert compared.returncode in (1, 3) and f"report: {first}" in compared.stdout, compared.stdout + compared.stderr
    against = etfarm("report", str(b), "--against", str(a), "--output", str(second), env=env)
    assert against.returncode == 0 and f"report: {second}" in against.stdout, against.stderr
    assert first.read_bytes() == second.read_bytes()
    text = page_text(first)
    assert "pinned mlp: regressed" in text or "pinned mlp: inconclusive" in text, text[:2000]
    assert "BELOW THE THRESHOLD" not in text  # a program 5-17x slower, held back, is not "below the threshold"

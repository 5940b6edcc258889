"""`etfarm analyze` and `etfarm trace` through the CLI entry point."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.cli import main
from orchestrator.profiles.analysis_core import STATS_COLUMNS
from tests.helpers.etdumps import build_etdump, typical_runs


@pytest.fixture
def etdumps(tmp_path: Path) -> list[Path]:
    paths = []
    for k in range(3):
        path = tmp_path / f"run-{k}.etdp"
        path.write_bytes(build_etdump(typical_runs(iterations=4, layers=3, base=(k + 1) * 10**7)))
        paths.append(path)
    return paths


def test_analyze_prints_table_and_writes_csv(etdumps: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stats.csv"
    assert main(["analyze", *map(str, etdumps), "--out", str(out), "--top", "2"]) == 0
    text = capsys.readouterr().out
    assert "3 ETDump file(s)" in text and "top 2 of 3 events" in text and "Method::execute" in text
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[: len(STATS_COLUMNS)] == STATS_COLUMNS
    execute = next(r for r in rows if r["event_name"] == "Method::execute")
    assert execute["samples"] == "12"


def test_analyze_bad_file_is_a_one_line_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.etdp"
    bad.write_bytes(b"\x00" * 64)
    assert main(["analyze", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {bad}: not an ETDump (file identifier is not ED00)"
    assert main(["analyze", str(tmp_path / "missing.etdp")]) == 2
    assert "missing.etdp: no such file" in capsys.readouterr().err


def test_csv_to_unwritable_place_is_an_analysis_error(etdumps: list[Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("a regular file cannot hold stats.csv")
    assert main(["analyze", str(etdumps[0]), "--out", str(tmp_path / "a-file" / "stats.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {tmp_path / 'a-file' / 'stats.csv'}: cannot write CSV") and "\n" not in err


def test_trace_command(etdumps: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.json"
    assert main(["trace", str(etdumps[0]), "-o", str(out), "--run-block", "1"]) == 0
    assert "slices" in capsys.readouterr().out
    events = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 7 and {e["args"]["run_block"] for e in events} == {1}
    assert main(["trace", str(etdumps[0]), "-o", str(out), "--run-block", "99"]) == 2


def test_analyze_does_not_import_pandas_or_torch(etdumps: list[Path]) -> None:
    code = (
        "import sys; from orchestrator.cli import main; rc = main(['analyze', *sys.argv[1:]]);"
        "bad = [m for m in ('pandas', 'torch', 'executorch') if m in sys.modules];"
        "print('HEAVY', bad); sys.exit(rc)"
    )
    result = subprocess.run([sys.executable, "-c", code, *map(str, etdumps)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout


def test_analyze_json_is_one_document(etdumps: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stats.csv"
    assert main(["analyze", *map(str, etdumps), "--json", "--out", str(out)]) == 0
    view = json.loads(capsys.readouterr().out)  # nothing else on stdout
    assert view["samples"] > 0 and view["csv"] == str(out) and out.is_file()
    execute = next(e for e in view["events"] if e["event_name"] == "Method::execute")
    assert execute["samples"] == 12 and list(execute)[: len(STATS_COLUMNS)] == STATS_COLUMNS

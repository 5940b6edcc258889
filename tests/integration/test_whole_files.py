"""Issue 31 (3): the files of a run directory are read whole or refused, in one line naming the file.

One real run (tiny_mlp with --numerics on `local`, once per module), copied per test and cut as a copy
that stopped or a full disk would cut it: stats.csv in the middle of a row (the red team's case: `etfarm
report` showed one op named `Method::ini`), manifest.json inside its JSON, the numerics debug buffer
(only its first half is ever read, so a cut went unseen). Every reader refuses: `report`, `store import`,
`compare --html` (which reads stats.csv), `numerics` (which compares what it can and names the file).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"

pytestmark = pytest.mark.slow


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole") / "run"
    done = etfarm("run", "--model", MLP, "--backend", "portable", "--runs", "2", "--iterations", "3", "--warmup", "1",
                  "--untraced-runs", "0", "--numerics", "--no-store", "--no-report", "--out", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def cut(run: Path, dest: Path, name: str, at: str | None = None) -> Path:
    """A copy of the run with `name` cut just past the first `at` (else in its middle)."""
    shutil.copytree(run, dest)
    path = dest / name
    data = path.read_bytes()
    end = data.index(at.encode()) + len(at) if at is not None else len(data) // 2
    path.write_bytes(data[:end])
    return dest


def one_error(result: subprocess.CompletedProcess[str], said: str) -> None:
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert len(lines) == 1 and lines[0] == f"error: {said}", result.stderr[-3000:]


@pytest.mark.parametrize("command", ["report", "store import", "compare --html"])
def test_a_stats_csv_cut_mid_row_is_refused(finished_run: Path, tmp_path: Path, command: str) -> None:
    run = cut(finished_run, tmp_path / "cut", "stats.csv", at="Method::ini")
    argv = {"report": ["report", str(run), "-f", "md"],
            "store import": ["store", "import", str(run), "--store", str(tmp_path / "s.db")],
            "compare --html": ["compare", str(finished_run), str(run), "--store", str(tmp_path / "s.db"),
                               "--html", str(tmp_path / "ab.html")]}[command]
    one_error(etfarm(*argv), f"{run / 'stats.csv'}: not a whole etfarm stats.csv: it ends inside a line (cut short?)")
    if command == "store import":  # nothing half-imported
        with sqlite3.connect(tmp_path / "s.db") as db:
            assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_a_cut_manifest_is_refused(finished_run: Path, tmp_path: Path) -> None:
    run = cut(finished_run, tmp_path / "cut", "manifest.json")
    one_error(etfarm("report", str(run), "-f", "md"),
              f"{run / 'manifest.json'}: not a whole manifest: it ends inside its JSON (cut short?)")


def test_numerics_names_a_cut_debug_buffer_and_compares_the_rest(finished_run: Path, tmp_path: Path) -> None:
    run = cut(finished_run, tmp_path / "cut", "local/tiny_mlp/run-2/debug_output.bin")
    buffer = run / "local" / "tiny_mlp" / "run-2" / "debug_output.bin"
    whole = (finished_run / "local" / "tiny_mlp" / "run-2" / "debug_output.bin").stat().st_size
    result = etfarm("numerics", str(run))
    assert result.returncode == 3, result.stdout + result.stderr[-3000:]  # nothing diverges, something not compared
    assert (f"not compared: {buffer}: not a whole debug buffer: {whole // 2} bytes, the runner wrote {whole} "
            "(cut short?)") in result.stdout, result.stdout

"""`etfarm store import`, `etfarm history` and `history show` through the CLI entry point (a real SQLite file)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.unit.store.rundirs import make_run_dir


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [make_run_dir(tmp_path / "runs", "r1", "2026-11-01T10:00:00+0000"),
            make_run_dir(tmp_path / "runs", "r2", "2026-11-02T10:00:00+0000", failed=("rpi5",)),
            make_run_dir(tmp_path / "runs", "r3", "2026-11-03T10:00:00+0000", models=("cnn",), devices=("local",))]


def test_import_is_idempotent_and_history_lists_newest_first(runs: list[Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    assert main(["store", "import", *map(str, runs), "--store", db]) == 0
    assert main(["store", "import", str(runs[0]), "--store", db]) == 0
    out = capsys.readouterr().out
    assert "recorded r1" in out and "re-recorded r1" in out
    assert main(["history", "--store", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["run", "started", "status", "model"]
    assert [line.split()[0] for line in lines[2:]] == ["r3", "r2", "r1"]
    r2 = next(line for line in lines if line.startswith("r2"))
    assert "failed" in r2 and "abc123" in r2  # rpi5 failed; the model's commit is shown

    assert main(["history", "--store", db, "--model", "mlp", "--device", "rpi5", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == ["r2", "r1"]
    assert {p["device"] for r in listed for p in r["points"]} == {"rpi5"}
    assert listed[1]["points"][0]["e2e_p50_ms"] == pytest.approx(0.2115)  # median of 0.2 + 0.01 i + 0.001 k

    assert main(["history", "--store", db, "--since", "2026-11-02", "--limit", "1", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["r3"]


def test_history_show(runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "s.db")
    main(["store", "import", str(runs[1]), "--store", db])
    capsys.readouterr()
    assert main(["history", "show", "r2", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "run r2: partial" in out and "[rpi5] unreachable" in out and "pass" in out and "abi x86_64" in out
    assert main(["history", "show", "r2", "--store", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["devices"]["rpi5"]["status"] == "failed"
    assert main(["history", "show", "nope", "--store", db]) == 2
    assert "no stored run 'nope'" in capsys.readouterr().err


def test_reading_never_creates_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "absent.db"
    assert main(["history", "--store", str(db)]) == 0
    assert "does not exist yet" in capsys.readouterr().out
    assert main(["history", "show", "r1", "--store", str(db)]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not db.exists()


def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "import", str(tmp_path), "--store", str(tmp_path / "s.db")]) == 2
    assert "no such manifest" in capsys.readouterr().err
    assert main(["history", "--since", "soon", "--store", str(tmp_path / "s.db")]) == 2
    assert capsys.readouterr().err.startswith("error: --since:")
    (tmp_path / "junk.db").write_text("not sqlite" * 200)
    assert main(["history", "--store", str(tmp_path / "junk.db")]) == 2
    assert "not a usable etfarm store" in capsys.readouterr().err


def test_history_does_not_import_torch(runs: list[Path], tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    probe = ("import sys\nfrom orchestrator.cli import main\n"
             f"for argv in (['store', 'import', {str(runs[0])!r}, '--store', {db!r}], ['history', '--store', {db!r}],\n"
             f"             ['history', 'show', 'r1', '--store', {db!r}], ['history', '--help']):\n"
             "    assert main(argv) == 0, argv\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch', 'pandas'))\n"
             "print('HEAVY', heavy)\n")
    result = subprocess.run([sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout
    # listing history reads only typed rows: not even numpy
    listing = ("import sys\nfrom orchestrator.cli import main\n"
               f"assert main(['history', '--store', {db!r}]) == 0\n"
               "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'pandas')))\n")
    result = subprocess.run([sys.executable, "-c", listing], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout

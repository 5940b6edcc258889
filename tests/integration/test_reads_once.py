"""One `etfarm run` with the store and the report on reads each pulled ETDump once; what comes after it reads none.

The run happens in this process (the CLI's `main`, as the console script calls it), so every
open of a file can be seen: a Python audit hook counts the opens for reading of each
`DIR/<device>/<model>/run-<k>/etdump.etdp`, whoever opens it (the analysis, the store's ingest,
the report, compare). The job hands its statistics and samples to the store and the report in memory,
and writes the samples beside stats.csv (DIR/samples.npz), so `etfarm compare`, `etfarm report DIR`,
`etfarm store import DIR` and `etfarm publish` read it, not the ETDumps; a run directory without that file
(written before it) is read from its ETDumps, to the same results.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from orchestrator.cli import main
from orchestrator.profiles.analysis_core import collect_samples
from orchestrator.profiles.stat_rows import read_stats_csv
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from tests.helpers.inspector_stats import measured_samples

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
_WATCHING: list[Path] = []  # the run directory whose ETDump reads are counted (audit hooks stay for good)
_READS: Counter[Path] = Counter()


def _count_reads(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _WATCHING or not isinstance(args[0], (str, os.PathLike)):
        return
    path, mode, flags = args
    reading = ("r" in mode and "+" not in mode) if isinstance(mode, str) else (flags & os.O_ACCMODE) == os.O_RDONLY
    if reading and os.fspath(path).endswith("etdump.etdp"):
        resolved = Path(os.fspath(path)).resolve()
        if resolved.is_relative_to(_WATCHING[0]):
            _READS[resolved] += 1


sys.addaudithook(_count_reads)


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[Counter[Path]]:
    _WATCHING.append(tmp_path.resolve())
    _READS.clear()
    try:
        yield _READS
    finally:
        _WATCHING.clear()


@pytest.mark.slow
def test_a_run_with_store_and_report_reads_each_etdump_once(counted: Counter[Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out, store = tmp_path / "run", tmp_path / "results.db"
    code = main(["run", "--devices", "local", "--model", TINY, "--runs", "2", "--iterations", "3", "--warmup", "1",
                 "--out", str(out), "--store", str(store)])
    printed = capsys.readouterr()
    assert code == 0, printed.err[-3000:]
    assert f"report: {out / 'report.html'}" in printed.out and "stored as" in printed.err
    etdumps = sorted(p.resolve() for p in out.glob("local/tiny_cnn/run-*/etdump.etdp"))
    assert len(etdumps) == 2
    assert dict(counted) == {path: 1 for path in etdumps}  # the analysis; the store and the report took it in memory
    _WATCHING.clear()

    # What the store holds from memory is, row for row, what it reads from the run directory.
    job = load_manifest(out)
    with open_store(store) as opened:
        samples = opened.event_samples(job.run_id, "local", "tiny_cnn")
        events = opened.events(job.run_id, "local", "tiny_cnn")
    direct = collect_samples(etdumps, job.model_artifacts("tiny_cnn").etrecord)  # type: ignore[union-attr]
    stats = pd.read_csv(out / "stats.csv")
    assert samples and sum(e.samples for e in events) == stats["samples"].sum()  # the store's rows are stats.csv's
    assert measured_samples(stats).sum() == direct.duration_ms.size  # kept + contended: every sample of the ETDumps
    again = tmp_path / "imported.db"
    assert main(["store", "import", str(out), "--store", str(again)]) == 0
    with sqlite3.connect(store) as a, sqlite3.connect(again) as b:
        for table in ("models", "devices", "results", "process_runs", "events"):
            query = f"SELECT * FROM {table} ORDER BY rowid"
            assert a.execute(query).fetchall() == b.execute(query).fetchall(), table
    # and the report built from memory is the one `etfarm report DIR` builds from the run directory
    assert main(["report", str(out), "--store", str(store), "--output", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == (out / "report.html").read_bytes()


def _run(out: Path, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--devices", "local", "--model", TINY, "--runs", "3", "--iterations", "3", "--warmup", "1",
                 "--out", str(out), "--store", str(store), "--no-report"])
    assert code == 0, capsys.readouterr().err[-3000:]


def _compare_json(a: Path, b: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    code = main(["compare", str(a), str(b), "--json"])
    printed = capsys.readouterr()
    assert code in (0, 1, 3), printed.err[-3000:]  # a verdict, whichever this busy host gives
    return printed.out


def _table(store: Path, table: str) -> list[Any]:
    with sqlite3.connect(store) as db:
        return db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()


@pytest.mark.slow
def test_compare_report_store_import_and_publish_read_no_etdump(counted: Counter[Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.report.builders.ops import device_op_runs
    from orchestrator.results.samples import pair_samples

    a, b, store = tmp_path / "a", tmp_path / "b", tmp_path / "results.db"
    _run(a, store, capsys)
    _run(b, store, capsys)
    etdumps = sorted(p.resolve() for p in tmp_path.glob("*/local/tiny_cnn/run-*/etdump.etdp"))
    assert len(etdumps) == 6 and dict(counted) == {path: 1 for path in etdumps}  # the job's own analysis, once
    recorded = pair_samples(b / "samples.npz", "local", "tiny_cnn")
    assert recorded is not None and recorded.samples.run_labels == ("run-1", "run-2", "run-3")
    counted.clear()

    compared = _compare_json(a, b, capsys)
    assert json.loads(compared)["pairs"][0]["ops"]  # per-op verdicts: from the samples
    assert main(["report", str(b), "--store", str(store), "--output", str(tmp_path / "b.html")]) == 0
    imported = tmp_path / "imported.db"
    assert main(["store", "import", str(a), "--store", str(imported)]) == 0
    assert main(["store", "import", str(b), "--store", str(imported)]) == 0
    assert main(["publish", "--out", str(tmp_path / "site"), "--store", str(imported)]) == 0
    job = load_manifest(b)
    result = job.device("local").model("tiny_cnn")  # type: ignore[union-attr]
    assert result is not None
    rows = [r for r in read_stats_csv(b / "stats.csv") if r.model == "tiny_cnn"]
    op_runs = device_op_runs(RunRecord(b), "local", result, rows)  # a multi-device report's op intervals
    assert op_runs and dict(counted) == {}  # not one ETDump opened
    for table in ("models", "devices", "results", "process_runs", "events"):
        assert _table(store, table) == _table(imported, table), table  # the store from memory = from the file

    # Run directories written before the samples file: their ETDumps are read, to the very same results.
    for run in (a, b):
        (run / "samples.npz").rename(run / "samples.npz.away")
    assert _compare_json(a, b, capsys) == compared
    again = device_op_runs(RunRecord(b), "local", result, rows)
    assert list(again) == list(op_runs) and all(
        len(x) == len(y) and all(np.array_equal(u, v) for u, v in zip(x, y, strict=True))
        for x, y in zip(again.values(), op_runs.values(), strict=True))
    old = tmp_path / "old.db"
    assert main(["store", "import", str(a), "--store", str(old)]) == 0
    assert main(["store", "import", str(b), "--store", str(old)]) == 0
    for table in ("models", "devices", "results", "process_runs", "events"):
        assert _table(old, table) == _table(imported, table), table
    assert set(counted) == set(etdumps)  # this time they were read

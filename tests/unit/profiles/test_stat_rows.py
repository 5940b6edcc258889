"""profiles.stat_rows: one typed row per stats.csv line, one writer, one reader (booleans parsed there only)."""

from __future__ import annotations

import csv
from dataclasses import fields, replace
from pathlib import Path

import pandas as pd
import pytest

from orchestrator.base.errors import DataError
from orchestrator.profiles.analysis import load_samples, summarize
from orchestrator.profiles.analysis_core import (
    EVENT_COLUMNS,
    IDENTITY_COLUMNS,
    KERNEL_COLUMNS,
    LINK_COLUMNS,
    SPREAD_COLUMNS,
    STATS_COLUMNS,
)
from orchestrator.profiles.stat_rows import (
    COLUMNS,
    PHASE_COLUMNS,
    StatRow,
    csv_text,
    group_rows,
    model_stats,
    read_stats_csv,
    write_stats_csv,
)
from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs
from tests.unit.profiles.test_etrecord import EDGE, node, write_etrecord


def _dumps(root: Path, device: str, model: str, runs: int, base: int, delegated: bool = False) -> list[Path]:
    paths = []
    for k in range(1, runs + 1):
        path = root / device / model / f"run-{k}" / "etdump.etdp"
        path.parent.mkdir(parents=True)
        blocks = typical_runs(iterations=3, layers=3, base=base * k)
        if delegated:  # a delegate's kernel with a string identifier, and one whose time is 0 (cv: none)
            blocks[1].events = [*(blocks[1].events or []), Profile("Conv", instr=1, dd_str="Conv", start=5, end=5)]
        path.write_bytes(build_etdump(blocks))
        paths.append(path)
    return paths


def _etrecord(path: Path) -> Path:
    nodes = [node(f"op{i}", EDGE + "aten.addmm.default", i + 1) for i in range(3)]
    return write_etrecord(path, nodes, {str(i): i + 1 for i in range(3)},
                          {"1": {"name": "XnnpackBackend", "delegate_map": {"Conv": [2]}}})


def _pandas_stats_csv(parts: list[tuple[str, str, list[Path], Path | None]]) -> str:
    """What the job wrote before stat_rows: summarize() per (device, model), concatenated, to_csv."""
    frames = []
    for device, model, paths, etrecord in parts:
        frame = summarize(load_samples(paths, etrecord=etrecord, run_labels=[p.parent.name for p in paths]))
        frame.insert(0, "model", model)
        frame.insert(0, "device", device)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).to_csv(index=False)


@pytest.mark.parametrize("linked", [(False, False), (True, True), (False, True)])
def test_the_writer_writes_what_pandas_wrote_byte_for_byte(tmp_path: Path, linked: tuple[bool, bool]) -> None:
    record = _etrecord(tmp_path / "m.etrecord")
    parts = [("local", "mlp", _dumps(tmp_path, "local", "mlp", 3, 1_000_000, delegated=True),
              record if linked[0] else None),
             ("rpi5", "mlp", _dumps(tmp_path, "rpi5", "mlp", 2, 3_000_000), record if linked[1] else None)]
    stats = [model_stats(device, model, paths, etrecord) for device, model, paths, etrecord in parts]
    text = csv_text(row for s in stats for row in s.rows)
    # The identity columns came after pandas (op_identity.py): every column before them is as pandas wrote it.
    kept = "".join(line.rsplit(",", len(IDENTITY_COLUMNS))[0] + "\n" for line in text.splitlines())
    assert kept == _pandas_stats_csv(parts)
    linked_columns = len(LINK_COLUMNS) + len(KERNEL_COLUMNS)
    assert text.splitlines()[0].split(",") == [*(COLUMNS if any(linked) else COLUMNS[:-linked_columns]),
                                               *IDENTITY_COLUMNS]


def test_rows_read_back_equal_the_rows_written(tmp_path: Path) -> None:
    stats = model_stats("local", "mlp", _dumps(tmp_path, "local", "mlp", 2, 1_000_000, delegated=True),
                        _etrecord(tmp_path / "m.etrecord"))
    assert stats.samples is not None and stats.samples.run_labels == ("run-1", "run-2")
    path = write_stats_csv(tmp_path / "stats.csv", stats.rows)
    back = read_stats_csv(path)
    assert back == stats.rows  # floats exactly, booleans parsed, the identifier a string, None where empty
    kernel = next(r for r in back if r.event_name == "Conv")
    assert kernel.is_delegated_op is True and kernel.delegate_debug_identifier == "Conv" and kernel.cv is None
    assert next(r for r in back if r.event_name == "Method::execute").is_delegated_op is False
    assert path.read_bytes().count(b"\r") == 0 and not list(tmp_path.glob(".tmp-*"))


def test_a_field_longer_than_pythons_csv_limit_reads_back(tmp_path: Path) -> None:
    """One delegate call of a large model lists every op it covers (YOLOS: 177 KB of op_types): what run wrote,
    report reads, whatever Python's default csv field limit (131072)."""
    import csv
    from dataclasses import replace

    stats = model_stats("local", "mlp", _dumps(tmp_path, "local", "mlp", 1, 1_000_000, delegated=True),
                        _etrecord(tmp_path / "m.etrecord"))
    long = "aten.linear.default," * 10_000  # 200 KB
    rows = tuple(replace(r, op_types=long) if r.event_name == "Conv" else r for r in stats.rows)
    path = write_stats_csv(tmp_path / "stats.csv", rows)
    csv.field_size_limit(131072)  # Python's default, as a fresh process has it
    back = read_stats_csv(path)
    assert next(r for r in back if r.event_name == "Conv").op_types == long


def test_the_fields_are_the_columns_in_order() -> None:
    assert [f.name for f in fields(StatRow)] == ["device", "model", *STATS_COLUMNS, *SPREAD_COLUMNS, *EVENT_COLUMNS,
                                                 *LINK_COLUMNS, *KERNEL_COLUMNS, *PHASE_COLUMNS, *IDENTITY_COLUMNS,
                                                 "contended_samples"]


def test_analyze_columns_and_an_empty_linked_file(tmp_path: Path) -> None:
    row = StatRow("d", "m", "Execute", 0, "op", 2, avg_ms=0.5, p50_ms=0.5)
    header = csv_text([row], with_ids=False).splitlines()[0].split(",")
    assert header == [*STATS_COLUMNS, *SPREAD_COLUMNS, *EVENT_COLUMNS, *IDENTITY_COLUMNS]
    assert csv_text([], with_ids=False, linked=True).splitlines() == [
        ",".join([*STATS_COLUMNS, *SPREAD_COLUMNS, *EVENT_COLUMNS, *LINK_COLUMNS, *KERNEL_COLUMNS, *IDENTITY_COLUMNS])]


def test_the_reader_takes_partial_and_foreign_spellings(tmp_path: Path) -> None:
    path = tmp_path / "stats.csv"
    path.write_text("device,model,event_block,event_index,event_name,samples,p50_ms,avg_ms,is_delegated_op,cv\n"
                    "d,m,Execute,0,a,6,0.2,0.25,true,\n"
                    "d,m,Execute,1,b,6,0.1,0.1,FALSE,nan\n"
                    "e,m,Execute,0,a,6,0.3,0.3,,0.1\n")
    rows = read_stats_csv(path)
    assert [r.is_delegated_op for r in rows] == [True, False, None]
    assert [r.cv for r in rows] == [None, None, 0.1] and rows[0].op_types is None and not rows[0].linked
    assert list(group_rows(rows)) == [("d", "m"), ("e", "m")]
    assert read_stats_csv(tmp_path / "absent.csv") == ()


def test_a_file_that_is_not_stats_csv_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "stats.csv"
    path.write_text("device,model,event_name\nd,m,a\n")
    with pytest.raises(DataError, match="not an etfarm stats.csv .missing columns avg_ms, event_block"):
        read_stats_csv(path)
    path.write_text("device,model,event_block,event_index,event_name,p50_ms,avg_ms\nd,m,E,x,a,1,1\n")
    with pytest.raises(DataError, match="not a whole etfarm stats.csv: line 2, column event_index: 'x' does not parse"):
        read_stats_csv(path)


HEADER = "device,model,event_block,event_index,event_name,samples,p50_ms,avg_ms,is_delegated_op,op_types\n"


@pytest.mark.parametrize(("text", "why"), [
    # the red team's file: cut in the middle of its first row (was: one op named 'Method::ini')
    (HEADER + "d,m,Execute,0,Method::ini", "it ends inside a line (cut short?)"),
    (HEADER + "d,m,Execute,0,a,6,0.2,0.25,True,x\nd,m,Execute,1,b,6,0.1", "it ends inside a line"),
    (HEADER[:40], "it ends inside a line"),  # cut in the header
    (HEADER + "d,m,Execute,0,a,6,0.2,0.25,True,x\nd,m,Execute,1,b,6\n", "line 3 has 6 fields, the header 10"),
    (HEADER + "d,m,Execute,0,a,6,0.2,0.25,True,x,extra\n", "line 2 has 11 fields, the header 10"),
    (HEADER + 'd,m,Execute,0,a,6,0.2,0.25,True,"aten.add\n', "unexpected end of data"),  # cut inside a quoted field
    (HEADER + "d,m,Execute,0,a,6,0.2,0.2.5,True,x\n", "line 2, column avg_ms: '0.2.5' does not parse"),
    (HEADER + "d,m,Execute,0,a,6.5,0.2,0.25,True,x\n", "line 2, column samples: '6.5' does not parse"),
    (HEADER + "d,m,Execute,0,a,6,0.2,0.25,Tr,x\n", "line 2, column is_delegated_op: 'Tr' does not parse"),
])
def test_a_file_that_is_not_whole_is_refused_naming_it(tmp_path: Path, text: str, why: str) -> None:
    """Issue 31: stats.csv is read whole or refused, with one line naming the file."""
    path = tmp_path / "stats.csv"
    path.write_text(text)
    with pytest.raises(DataError) as refused:
        read_stats_csv(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: not a whole etfarm stats.csv") and why in message and "\n" not in message


def test_the_writer_quotes_as_csv_does(tmp_path: Path) -> None:
    row = replace(StatRow("d", "m", "Execute", 0, 'odd, "name"', 1, avg_ms=1.0, p50_ms=1.0),
                  **{column: "" for column in (*LINK_COLUMNS, *KERNEL_COLUMNS)})
    path = write_stats_csv(tmp_path / "stats.csv", [row])
    with open(path, newline="") as fh:
        (read,) = list(csv.DictReader(fh))
    assert read["event_name"] == 'odd, "name"' and read_stats_csv(path) == (row,)


def test_a_run_without_samples_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "d" / "m" / "run-1" / "etdump.etdp"
    path.parent.mkdir(parents=True)
    path.write_bytes(build_etdump([Run("Execute", [])]))
    assert model_stats("d", "m", [path], None).rows == ()

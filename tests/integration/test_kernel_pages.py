"""XNNPACK kernels named in the user's model through everything a user reads: stats.csv, the report, compare, the store.

One real `etfarm run` on `local` (real exports, the C++ runner, real ETDumps, a real SQLite store) of a
CNN with three convolutions under distinct attribute names (fp32, and PT2E int8) and the demo CNN.
Expectations come from the nn.Module (its submodules, their types and order), never from strings
copied out of a mapping. And an ETRecord of another program is refused by `etfarm analyze`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.artifacts.modelspec import load_factory_result, parse_model_spec
from orchestrator.profiles.kernel_align import operator_family
from orchestrator.profiles.stat_rows import StatRow, group_rows, read_stats_csv
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from tests.helpers.exports import export_ahead

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).resolve().parent / "models"
TINY_CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
THREE_CONVS = f"{MODELS / 'three_convs.py'}:build"
THREE_CONVS_INT8 = f"{MODELS / 'int8.py'}:three_convs_int8"
COMPUTE = ("Convolution", "Fully Connected", "Max Pooling", "Mean")


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=1200, env=env, check=False)


RUN_ARGS = ("--runs", "3", "--iterations", "20", "--warmup", "1")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("kernel-pages")
    store = root / "results.db"
    env = {**os.environ, "ETFARM_STORE": str(store)}
    export_ahead(THREE_CONVS, TINY_CNN)
    result = etfarm("run", "--model", THREE_CONVS, "--model", TINY_CNN, *RUN_ARGS, "--out", str(root / "run"), env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return root / "run", store


@pytest.fixture(scope="module")
def int8_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The PT2E int8 model in a job of its own: XNNPACK's int8 kernels round differently from the eager quantized
    reference (about 7e-3 here), so the job may end `wrong-results` (exit 1); its statistics are written all the same."""
    out = tmp_path_factory.mktemp("kernel-pages-int8") / "run"
    export_ahead(THREE_CONVS_INT8)
    result = etfarm("run", "--model", THREE_CONVS_INT8, "--name", "three_convs_int8", *RUN_ARGS, "--out", str(out),
                    "--no-store")
    assert result.returncode == 0 or "wrong results: three_convs_int8" in result.stdout, result.stderr[-3000:]
    return out


def kernels(rows: tuple[StatRow, ...]) -> list[StatRow]:
    return [r for r in rows if r.kernel_mapping]


def modules_of(spec: str, *types: type) -> list[str]:
    model = load_factory_result(parse_model_spec(spec))[0]
    return [name for name, module in model.named_modules() if isinstance(module, types)]


@pytest.mark.parametrize("model", ["three_convs", "three_convs_int8"])
def test_each_convolution_kernel_row_names_its_own_convolution(run: tuple[Path, Path], int8_run: Path,
                                                              model: str) -> None:
    from torch import nn

    run_dir = int8_run if model.endswith("int8") else run[0]
    rows = group_rows(read_stats_csv(run_dir / "stats.csv"))[("local", model)]
    found = kernels(rows)
    assert found and all(r.kernel_mapped for r in found), [(r.event_name, r.kernel_note) for r in found]
    convs = modules_of(THREE_CONVS, nn.Conv2d)
    compute = [r for r in found if operator_family(r.event_name) in ("Convolution", "Fully Connected")]
    assert [r.module_path for r in compute] == convs and len(set(convs)) == 3  # each its own, all three differ
    assert all(r.source_line.startswith("three_convs.py:") for r in compute)
    assert len({r.source_line for r in compute}) == 3  # three lines of forward
    assert {r.module_path for r in found} <= {*convs, ""}


def test_every_demo_kernel_names_the_features_module_it_came_from(run: tuple[Path, Path]) -> None:
    from torch import nn

    rows = group_rows(read_stats_csv(run[0] / "stats.csv"))[("local", "tiny_cnn")]
    found = kernels(rows)
    assert found and all(r.kernel_mapped for r in found)
    ran_as = {"Convolution": nn.Conv2d, "Max Pooling": nn.MaxPool2d, "Mean": nn.AdaptiveAvgPool2d,
              "Fully Connected": nn.Linear}
    compute = [r for r in found if operator_family(r.event_name) in ran_as]
    assert [r.module_path for r in compute] == modules_of(TINY_CNN, *ran_as.values())
    for row in found:  # every kernel: a features.N itself, the head, or the model's own line (the flatten)
        assert row.module_path in {"", "head"} or (row.module_path.startswith("features.")
                                                   and row.module_path.count(".") == 1), row


def test_the_report_compare_and_store_speak_of_the_same_modules(run: tuple[Path, Path]) -> None:
    run_dir, store_path = run
    rows = group_rows(read_stats_csv(run_dir / "stats.csv"))[("local", "tiny_cnn")]
    convs = [r for r in kernels(rows) if operator_family(r.event_name) == "Convolution"]
    markdown = etfarm("report", str(run_dir), "--format", "md", "--store", str(store_path))
    assert markdown.returncode == 0, markdown.stderr
    section = markdown.stdout[markdown.stdout.index("### Model tiny\\_cnn"):].splitlines()
    for row in convs:  # the top-ops table names each convolution kernel's own module, not "delegate over"
        line = next(line for line in section if line.startswith(f"| {_md(row.event_name)} |"))
        assert f"`{row.module_path}`" in line and "delegate over" not in line, line
    from orchestrator.store import open_store

    with open_store(store_path) as store:
        events = {(e.event_block, e.event_index): e for e in store.events(load_manifest(run_dir).run_id, "local",
                                                                          "tiny_cnn")}
    for row in kernels(rows):
        stored = events[row.key]
        assert stored.meta["kernel_mapping"] == "mapped" and stored.meta["module_path"] == (row.module_path or None)
    from orchestrator.verdicts.compare import compare_jobs

    pair = next(p for p in compare_jobs(RunRecord(run_dir), RunRecord(run_dir)).pairs if p.model == "tiny_cnn")
    by_name = {op.event_name: op for op in pair.ops}
    for row in convs:  # per-op verdicts speak of the user's layers
        if row.event_name in by_name:
            assert by_name[row.event_name].module_path == row.module_path
    assert any(row.event_name in by_name for row in convs)


def test_analyze_refuses_an_etrecord_of_another_program(run: tuple[Path, Path], tmp_path: Path) -> None:
    """Issue 21 item 3: the three-convolution CNN's ETDump read with the demo CNN's ETRecord (and its .pte beside
    it) is refused, exit 2, naming the files; with its own, it is read."""
    run_dir = run[0]
    job = load_manifest(run_dir)
    dump = next((run_dir / "local" / "three_convs").glob("run-*/etdump.etdp"))
    other = job.model_artifacts("tiny_cnn")
    own = job.model_artifacts("three_convs")
    assert other is not None and own is not None and other.etrecord and own.etrecord
    refused = etfarm("analyze", str(dump), "--etrecord", other.etrecord)
    assert refused.returncode == 2 and "do not belong to the program of" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    read = etfarm("analyze", str(dump), "--etrecord", own.etrecord, "--top", "3", "--out", str(tmp_path / "s.csv"))
    assert read.returncode == 0 and "stem" in read.stdout, read.stderr
    # The roll-ups (issue 28): the convolutions' modules in the call tree; the op types with their counts, longest
    # first (which type is longest is timing: one stalled transpose on a busy host outweighs three convolutions).
    assert "time by module" in read.stdout and "time by op type" in read.stdout
    table = read.stdout.split("time by op type", 1)[1].split("\nwrote ", 1)[0].splitlines()[3:]
    rows = [line.split() for line in table[:table.index("")] if line] if "" in table else [line.split() for line in table]
    assert ["convolution", "3"] in [row[:2] for row in rows], rows
    totals = [float(row[2].replace(",", "")) for row in rows]
    assert totals == sorted(totals, reverse=True), rows
    # The tree itself (every module, in the file): the printed tree leaves out modules under 1 % of the time, and
    # one stalled op on a busy host can push the stem's single convolution under it.
    tree = [line.split(",") for line in (tmp_path / "s.rollups.csv").read_text().splitlines()[1:]]
    assert {"stem", "body", "squeeze"} <= {row[3] for row in tree if row[2] == "module"}, tree


def _md(text: str) -> str:
    from orchestrator.report.escape import md_text

    return md_text(text)

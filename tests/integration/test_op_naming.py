"""Every op names what it is in the user's model, on a transformer-style model run end to end.

`etfarm run` on `local` (real export, runner, ETDumps) of configs/models/tiny_transformer.py, then
each event's module path, delegate coverage and source line are checked against what ExecuTorch's
Inspector attaches to the same event with `enable_module_hierarchy=True` (the ETRecord's
nn_module_stack), and against the model file itself. An XNNPACK kernel event, for which Inspector
has no module hierarchy (it treats a delegate call as one operator), is checked against the kernel
mapping of the .pte instead (profiles/kernel_map.py): its own module path, source line and coverage.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from orchestrator.profiles.analysis_core import IDENTITY_COLUMNS, KERNEL_COLUMNS, LINK_COLUMNS, STATS_COLUMNS
from orchestrator.profiles.stat_rows import CLEAN_COLUMNS, read_stats_csv
from orchestrator.report.terminal.summary import summary
from orchestrator.results.model import load_manifest
from tests.helpers.exports import export_ahead

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
MODEL_FILE = REPO / "configs" / "models" / "tiny_transformer.py"


def _line_of(text: str) -> str:
    lines = MODEL_FILE.read_text().splitlines()
    return f"{MODEL_FILE.name}:{next(i + 1 for i, line in enumerate(lines) if text in line)}"


def _common_module(hierarchy: dict[str, Any]) -> str:
    """The oracle: the deepest module path present in every op's nn_module_stack."""
    paths = [[entry[0] for entry in stack.values()] for stack in hierarchy.values() if stack]
    if len(paths) != len(hierarchy) or not paths:
        return ""
    shared = [p for p in paths[0] if all(p in other for other in paths[1:])]
    return max(shared, key=lambda p: (p.count(".") + (p != ""), len(p)), default="")


@pytest.mark.parametrize("backend", ["xnnpack", "portable"])
def test_module_paths_equal_inspectors_module_hierarchy(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    export_ahead(f"{MODEL_FILE}:build", backend=backend)
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--model", f"{MODEL_FILE}:build",
                             "--backend", backend, "--runs", "2", "--iterations", "3", "--out", str(out), "--no-store"],
                            check=False, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    artifacts = load_manifest(out).models[0]
    etrecord = artifacts.etrecord
    stats = pd.read_csv(out / "stats.csv", keep_default_na=False)
    # new columns come after every column that was there before, in this order
    added = [*LINK_COLUMNS, *KERNEL_COLUMNS, *IDENTITY_COLUMNS, *CLEAN_COLUMNS]  # each new set after the last
    assert list(stats.columns[-len(added):]) == added
    assert list(stats.columns[2:2 + len(STATS_COLUMNS)]) == STATS_COLUMNS
    ours = {(r.event_block, int(r.event_index)): r for r in stats.itertuples()}

    from executorch.devtools import Inspector

    checked_delegates = checked_kernels = 0
    for dump in sorted((out / "local" / "tiny_transformer").glob("run-*/etdump.etdp")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inspector = Inspector(etdump_path=str(dump), etrecord=etrecord, enable_module_hierarchy=True)
        for block in inspector.event_blocks:
            for index, event in enumerate(block.events):
                row = ours.get((block.name, index))
                if row is None:  # no timing: not in stats.csv
                    continue
                if row.kernel_mapping:  # a delegate's kernel: Inspector has nothing; the .pte's mapping says
                    link = _kernel_links(artifacts.pte, etrecord, dump)[(block.name, index)]
                    assert (row.kernel_mapping == "mapped") == link.mapped, (index, event.name, link.reason)
                    if link.mapped:
                        assert (row.module_path, row.source_line, row.delegate_covers) == (
                            link.module_path, link.source_line, ";".join(link.covers)), (index, event.name)
                        checked_kernels += 1
                    continue
                assert row.module_path == _common_module(event.module_hierarchy), (index, event.name)
                if event.name == "DELEGATE_CALL":
                    innermost = [list(s.values())[-1][0] for s in event.module_hierarchy.values() if s]
                    assert row.delegate_covers.split(";") == list(dict.fromkeys(p for p in innermost if p))
                    checked_delegates += 1
    assert (checked_delegates > 0) == (backend == "xnnpack")
    assert (checked_kernels > 0) == (backend == "xnnpack")

    modules = set(stats["module_path"])
    for layer in (0, 1):
        assert {f"encoder.layers.{layer}.attention_norm", f"encoder.layers.{layer}.output_norm"} <= modules
    sources = set(stats["source_line"])
    assert _line_of("q = self.query(x)") in sources and _line_of("context = torch.matmul") in sources
    # The printed summary shows the slowest 12 ops, a set that depends on timing: stdout is checked for its table
    # (header with the module column, the method's row, always shown), the naming on every row of stats.csv
    # formatted by the same summary table `etfarm run` prints
    printed = result.stdout.splitlines()
    assert "model tiny_transformer on local" in printed, result.stdout[-3000:]
    header = next(line.split() for line in printed if line.split()[:2] == ["event", "block"])
    assert "module" in header and any(line.startswith("Method::execute ") for line in printed), result.stdout[-3000:]
    table = summary(read_stats_csv(out / "stats.csv"), top=len(stats)).splitlines()
    if backend == "xnnpack":
        query = stats[(stats.event_name == "DELEGATE_CALL") & stats.delegate_covers.str.contains("attention.query")]
        assert set(query["module_path"]) == {"encoder.layers.0.attention", "encoder.layers.1.attention"}
        assert set(query["source_line"]) == {_line_of("q = self.query(x)")}
        assert header[-2:] == ["module", "source"]
        assert any(line.startswith("DELEGATE_CALL ") and "encoder.layers.0.attention{query,key}" in line
                   and _line_of("q = self.query(x)") in line for line in table), "\n".join(table)  # the summary says it
    else:
        addmm = stats[stats.event_name == "native_call_addmm.out"]
        assert "encoder.layers.1.feed_forward.down" in set(addmm["module_path"])
        assert any(line.startswith("native_call_addmm.out ") and "encoder.layers.1.feed_forward.down" in line
                   for line in table), "\n".join(table)


def _kernel_links(pte: str | None, etrecord: str | None, dump: Path) -> dict[tuple[str, int], Any]:
    """(block, event index) -> KernelLink of every kernel event of the dump, from the .pte and ETRecord."""
    from orchestrator.profiles.etdump import read_etdump
    from orchestrator.profiles.etdump_events import block_key, group_blocks
    from orchestrator.profiles.kernel_map import load_kernel_program

    assert pte is not None and etrecord is not None
    program = load_kernel_program(pte, etrecord)
    out: dict[tuple[str, int], Any] = {}
    uses: dict[str, int] = {}
    for group in group_blocks(read_etdump(dump)):
        uses[group.name] = uses.get(group.name, 0) + 1
        for event, link in zip(group.events, program.link_block(group.events), strict=True):
            if link is not None:
                out[(block_key(group.name, uses[group.name]), event.index)] = link
    return out

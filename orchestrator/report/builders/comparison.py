"""What an A/B page says (a night against its baselines, `compare A B --html`, `report B --against A`), computed once.

The verdicts themselves are verdicts/compare.py's; this adds what the page needs around them:
- the structure diff of each pair: per op group (an event's name without its `#k`), how many
  events A and B ran, and the modules B's ops sit in that A's did not (or the reverse), from both
  runs' stats.csv: a model that doubled its layers says so; and from both ETRecords (model_structure.py)
  the ops added or removed by identity, parameter and output shapes per layer, parameter counts, dtypes
  and the programs' sizes: a model whose layers became 8x wider names them;
- each pair's baseline run and a link to its page when one exists beside the output;
- a night's confirmations (app/nightly.py), and the runs' trust notes, A's and B's;
- B's run reports (for a night, every job of it, the confirmation folded in).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.errors import EtfarmError
from orchestrator.profiles.model_structure import StructureDiff, read_structure, structure_diff
from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ops import op_group
from orchestrator.report.builders.trust import WORRYING, trust_notes
from orchestrator.report.model import ComparisonView, PairStructure, Report, StructureChange, TrustNote
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import Comparison, PairVerdict

if TYPE_CHECKING:
    from orchestrator.verdicts.confirmation import Confirmation

_NOT_OPS = frozenset({*FRAMEWORK_EVENTS, "OPERATOR_CALL", "DELEGATE_CALL"})
MODULES_LISTED = 6


def comparison_view(comparison: Comparison, runs: Sequence[Report], title: str, output_dir: Path | None,
                    confirmations: Sequence[Confirmation] = (), notes: Sequence[str] = ()) -> ComparisonView:
    records: dict[Path, RunRecord] = {}  # each run directory's files read once, however many pairs it has

    def record(run_dir: Path | None) -> RunRecord | None:
        return records.setdefault(run_dir, RunRecord(run_dir)) if run_dir is not None else None

    def rows(run_dir: Path | None, device: str, model: str) -> tuple[StatRow, ...] | None:
        found = record(run_dir)
        return found.stats.get((device, model)) if found is not None else None

    structure = tuple(replace(pair_structure(p.device, p.model, rows(p.dir_a, p.device, p.model_a),
                                             rows(p.dir_b, p.device, p.model_b)),
                              model_diff=_model_diff(p, record(p.dir_a), record(p.dir_b)))
                      for p in comparison.pairs)
    links = tuple((p.device, p.model, href) for p in comparison.pairs
                  if (href := _baseline_href(p, output_dir)))
    return ComparisonView(comparison, title, structure, links, tuple(confirmations),
                          _trust(comparison, record) or _trust_of_runs(comparison, runs), tuple(runs), tuple(notes))


def pair_structure(device: str, model: str, rows_a: Sequence[StatRow] | None,
                   rows_b: Sequence[StatRow] | None) -> PairStructure:
    if not rows_a or not rows_b:
        return PairStructure(device, model, (), 0, 0, (), (), False)
    count_a, count_b = _groups(rows_a), _groups(rows_b)
    changes = tuple(StructureChange(g, count_a.get(g, 0), count_b.get(g, 0))
                    for g in dict.fromkeys([*count_a, *count_b]) if count_a.get(g, 0) != count_b.get(g, 0))
    mods_a, mods_b = _modules(rows_a), _modules(rows_b)
    return PairStructure(device, model, changes, len(mods_a), len(mods_b),
                         tuple(m for m in mods_b if m not in mods_a)[:MODULES_LISTED],
                         tuple(m for m in mods_a if m not in mods_b)[:MODULES_LISTED], True)


def _model_diff(pair: PairVerdict, record_a: RunRecord | None, record_b: RunRecord | None) -> StructureDiff | None:
    """A's model against B's from their ETRecords (shapes, parameters, dtypes) and the programs' sizes on the device;
    None when a side's run directory, manifest or ETRecord is gone or unreadable."""
    sides = []
    for record, model in ((record_a, pair.model_a), (record_b, pair.model_b)):
        try:
            job = record.job if record is not None else None
        except EtfarmError:
            return None
        artifacts = job.model_artifacts(model) if job is not None else None
        if artifacts is None or not artifacts.etrecord or not Path(artifacts.etrecord).is_file():
            return None
        try:
            found = read_structure(artifacts.etrecord)
        except EtfarmError:
            return None
        device = job.device(pair.device)
        result = device.model(model) if device is not None else None
        sides.append((found, result.program_bytes if result is not None else None))
    (a, bytes_a), (b, bytes_b) = sides
    return structure_diff(a, b, (bytes_a, bytes_b)) if a is not None and b is not None else None


def _groups(rows: Sequence[StatRow]) -> Counter[str]:
    return Counter(op_group(r.event_name) for r in rows if r.event_name not in _NOT_OPS)


def _modules(rows: Sequence[StatRow]) -> list[str]:
    return list(dict.fromkeys(r.module_path for r in rows if r.event_name not in _NOT_OPS and r.module_path))


def _baseline_href(pair: PairVerdict, output_dir: Path | None) -> str:
    """A relative link to the baseline run's page: a nightly page beside the output naming that run, else the
    run directory's report.html; '' when there is none."""
    if output_dir is None or not pair.source_a or pair.dir_a is None:
        return ""
    for page in sorted(output_dir.glob("nightly-*.json")):
        try:
            ids = str(json.loads(page.read_text(encoding="utf-8")).get("b", "")).split("+")
        except (OSError, ValueError, AttributeError):
            continue
        html = page.with_suffix(".html")
        if pair.source_a in ids and html.is_file():
            return html.name
    report = pair.dir_a / "report.html"
    if report.is_file():
        return os.path.relpath(report, output_dir)
    return ""


def _trust_of_runs(comparison: Comparison, runs: Sequence[Report]) -> tuple[tuple[str, TrustNote], ...]:
    """The compared pairs' trust notes from the run reports the page carries (`run --ab`: its jobs, in memory, no run
    directory to read): the page never says "no process run was flagged" above the runs' own flagged runs."""
    wanted = {(p.device, model) for p in comparison.pairs for model in (p.model_a, p.model_b)}
    return tuple((f"run {run.run_id}", n) for run in runs for n in run.trust
                 if (n.device, n.model) in wanted and n.kind in (*WORRYING, "tracer"))


def _trust(comparison: Comparison,
           record: Callable[[Path | None], RunRecord | None]) -> tuple[tuple[str, TrustNote], ...]:
    """B's and each baseline's trust notes for the compared (device, model) pairs, each run read once."""
    out: list[tuple[str, TrustNote]] = []
    seen: set[tuple[Path, str, str]] = set()
    for pair in comparison.pairs:
        for label, run_dir, model in (("baseline", pair.dir_a, pair.model_a), ("this run", pair.dir_b, pair.model_b)):
            run = record(run_dir)
            if run is None or (run_dir, pair.device, model) in seen or not run.present:
                continue
            seen.add((run_dir, pair.device, model))
            job = run.job
            out += [(f"{label} {job.run_id}", n) for n in trust_notes(job, [model])
                    if n.device == pair.device and n.kind in (*WORRYING, "tracer")]
    return tuple(out)

"""A night's confirmation, interleaved: the baseline's program and the new one, A B B A on the same device in one job.

A regression a night finds is measured again the way Pinpoint confirms one: both programs in one job,
their process runs alternating ABBA (run/schedule.py), so whatever state the host or device is in hits
both sides alike; the interleaved verdict (app/ab.py) is the night's verdict for the pair.

The baseline's program is brought back by its identity, the export key its run's manifest records
(ModelArtifacts.key: the content hash of the model file with the exporter's settings): the .pte the
manifest names when it still holds that program, else any export cache entry of that key (the same
program exported under another name). When neither is there (the cache was cleared, the .pte given as
the model was overwritten), `baseline_program` says why and the night confirms as before, with a fresh
job of the new model alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.app.baseline import LAST_GOOD, last_good_finder, named_finder
from orchestrator.artifacts.export_entry import META_NAME, PTE_NAME
from orchestrator.artifacts.modelspec import ModelSpec, parse_model_spec
from orchestrator.base.cache import sha256_file
from orchestrator.base.errors import UsageError
from orchestrator.results.model import Job, JobOptions, ModelArtifacts
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import JobResult
from orchestrator.store import Store
from orchestrator.verdicts.compare import BaselineFinder, PairVerdict


@dataclass(frozen=True)
class BaselineProgram:
    """The baseline's program of one (device, model) pair, or why it cannot be had."""

    run_id: str  # the baseline run
    model: str  # the model's name in that run
    pte: Path | None  # None: not found (`missing` says why)
    missing: str = ""

    @property
    def note(self) -> str:
        if self.pte is not None:
            return f"the baseline's program ({self.model}, run {self.run_id}) from {self.pte}"
        return f"the baseline's program ({self.model}, run {self.run_id}) cannot be found: {self.missing}"


def baseline_finder(baseline: str, store: Store, job: Job) -> BaselineFinder:
    """The plan's baseline of each (device, model) of `job`: the last good run, or the run the plan names."""
    return last_good_finder(store, job) if baseline == LAST_GOOD else named_finder(store, baseline)


def confirmation_finder(baseline: str, store: Store, job: Job, before_step: Mapping[tuple[str, str], str]
                        ) -> BaselineFinder:
    """The program each suspected pair is confirmed against: where its series said regressed (`before_step`, from
    series_references), the newest job of the series' reference (the level before the drift, or the series' level),
    else the plan's baseline.

    A series spans separate jobs, and a device's own level can move between them (live, a quiet VM: every night
    after the first two ran 1.2-1.3x slower, and an unchanged model's series said `regressed 1.308x`): only tonight's
    program interleaved with the program from before the step tells the model's step from the device's. A reference
    run whose directory is gone falls back to the plan's baseline."""
    plans = baseline_finder(baseline, store, job)

    def find(device: str, model: str) -> RunRecord | None:
        run_id = before_step.get((device, model))
        if run_id is not None:
            try:
                return named_finder(store, run_id, "the series' reference")(device, model)
            except UsageError:  # its run directory is gone: the plan's baseline, as before
                pass
        return plans(device, model)

    return find


def series_references(suspects: Sequence[PairVerdict]) -> dict[tuple[str, str], str]:
    """(device, model) -> the newest run of the series' reference, for each suspected pair whose series regressed."""
    return {(p.device, p.model_a): p.series.reference_runs[-1] for p in suspects
            if p.series is not None and p.series.regressed and p.series.reference_runs}


Groups = dict[tuple[str, Path, str], list[str]]  # (model, baseline .pte, baseline run) -> its devices


def interleaved_groups(finder: BaselineFinder, regressed: Sequence[PairVerdict], options: JobOptions,
                       exports: Path) -> tuple[Groups, list[PairVerdict], list[str]]:
    """The regressed pairs that can be confirmed interleaved, one job per (model, baseline program), with their
    devices; the pairs that cannot (confirmed alone, as before), and why, one line each."""
    groups: Groups = {}
    alone: list[PairVerdict] = []
    why: list[str] = []
    for pair in regressed:
        found = finder(pair.device, pair.model_a)
        if options.recipes:  # a recipe sweep exports each configuration from the model file: no .pte to pair with
            reason = "export recipes sweep the model file, not a program: confirmed by a fresh job alone"
        elif found is None:
            reason = "no baseline run: confirmed by a fresh job alone"
        else:
            program = baseline_program(found.job, pair.model_a, exports)
            if program.pte is not None:
                groups.setdefault((pair.model_b, program.pte, program.run_id), []).append(pair.device)
                continue
            reason = f"{program.note}: confirmed by a fresh job alone"
        alone.append(pair)
        why.append(f"{pair.device} {pair.model_b}: {reason}")
    return groups, alone, why


def baseline_program(job: Job, model: str, exports: Path) -> BaselineProgram:
    """The program `model` ran as in the baseline `job`, found by its export key: the recorded .pte, else an
    entry of `exports` (the export cache) holding that key."""
    artifacts = next((m for m in job.models if m.name == model), None)
    if artifacts is None:
        return BaselineProgram(job.run_id, model, None, f"run {job.run_id} records no model {model}")
    found = find_program(artifacts, exports)
    if found is None:
        why = (f"neither {artifacts.pte} nor the export cache ({exports}) holds the program of key "
               f"{artifacts.key[:16]} any more")
        return BaselineProgram(job.run_id, model, None, why)
    return BaselineProgram(job.run_id, model, found)


def find_program(artifacts: ModelArtifacts, exports: Path) -> Path | None:
    """The .pte of `artifacts`' export key: the recorded one if it still holds it, else a cache entry's."""
    recorded = Path(artifacts.pte)
    if _holds(recorded, artifacts.key):
        return recorded
    for entry in sorted(exports.glob(f"*-{artifacts.key[:16]}")) if exports.is_dir() else ():
        if _entry_key(entry) == artifacts.key and (entry / PTE_NAME).is_file():
            return entry / PTE_NAME
    return None


def _holds(pte: Path, key: str) -> bool:
    """Whether `pte` is still the program of `key`: an export cache entry's meta says so; a .pte given as the
    model is keyed by its own content hash."""
    if not pte.is_file():
        return False
    if pte.name == PTE_NAME and (pte.parent / META_NAME).is_file():
        return _entry_key(pte.parent) == key
    return sha256_file(pte) == key


def _entry_key(entry: Path) -> str | None:
    try:
        found = json.loads((entry / META_NAME).read_text()).get("key")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def without_baseline(job: Job, stats: Sequence[Any], baseline: str) -> tuple[Job, tuple[Any, ...]]:
    """The confirmation job as the store keeps it: without the baseline's program, whose re-run is no night of any
    series (history, the dashboard); its run directory keeps both sides."""
    kept = replace(job, models=tuple(m for m in job.models if m.name != baseline),
                   devices=tuple(replace(d, models=tuple(r for r in d.models if r.name != baseline)) for d in job.devices))
    return kept, tuple(s for s in stats if s.model != baseline)


def job_specs(result: JobResult, models: set[str]) -> list[ModelSpec]:
    """The specs the job ran `models` from, named as the job named them (a sweep's models after their spec's)."""
    config = result.job.config
    named = dict(zip(config.models, config.names, strict=False))
    wanted = dict.fromkeys(m.spec for m in result.job.models if m.name in models)
    return [parse_model_spec(spec, named.get(spec) or next(m.name for m in result.job.models if m.spec == spec))
            for spec in wanted]

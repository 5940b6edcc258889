"""One half of a comparison: what one model measured on one device, over one or more jobs.

A `Side` holds its process runs (end-to-end samples from the results model, `ProcessRun.execute_ms` of the traced
runs) and their per-op samples: from the samples file the job wrote (results/samples.py), from each run's ETDump
where a run directory has none (`profiles.analysis_core.collect_samples`, numpy only: op_samples.py), or given in
memory (`OpSamples`). Sides come from run records (`side_from_job`), possibly pooled
over several jobs (`pool`), so `compare A B`, `run --ab` (two models of one job) and `nightly` share one path
(compare.py judges them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from orchestrator.artifacts.generation import LlmRunFigures
from orchestrator.base.errors import Blame
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.footprint import ModelMemory
from orchestrator.results.model import Job, ModelResult, ModelStatus, ProcessRun, VerificationStatus
from orchestrator.results.record import RunRecord
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.verdicts.likeness import Settings, model_settings, side_gap
from orchestrator.verdicts.locate import SideIdentities, side_identities
from orchestrator.verdicts.op_samples import OpSamples, read_op_samples, recorded_op_samples
from orchestrator.verdicts.trust import Load


@dataclass(frozen=True)
class SideRun:
    """One traced process run: its end-to-end samples and its ETDump (absolute path, if any)."""

    label: str
    execute_ms: tuple[float, ...]
    etdump: Path | None
    llm: LlmRunFigures | None = None  # an LLM's generations: TTFT and decode verdicts (llm_metrics.py)
    clean: tuple[bool, ...] | None = None  # per execution of the run: it waited for no CPU (None: not measured)
    dropped: int = 0  # executions left out of `execute_ms` as contended
    record: RunRecord | None = None  # its run directory (its samples file: results/samples.py), when it has one


@dataclass(frozen=True)
class Side:
    """One model on one device, over one or more jobs; `missing` says why there is no data."""

    source: str  # run id(s), for people
    device: str
    model: str
    runs: tuple[SideRun, ...] = ()
    missing: str | None = None
    blame: Blame | None = None
    verification: VerificationStatus | None = None
    op_samples: OpSamples | None = None  # per-op samples in memory; None: read from the runs' ETDumps
    settings: Settings = ()  # what it ran with (likeness.py); () unknown: compared with anything
    incomplete: str | None = None  # why the side is not whole (an interrupted job, a partial model), if it is not
    accuracy: Accuracy | None = None  # a recipe's outputs against the fp32 eager model (verdicts/accuracy.py)
    identities: SideIdentities = ()  # each event's op identity, from its run's stats.csv (op_samples.py keys)
    memory: ModelMemory | None = None  # memory by owner and the peak RSS (verdicts/memory.py)
    program: str | None = None  # the program it ran (its .pte in the run directory, else the spec): `run --ab` settles

    @property
    def e2e(self) -> list[tuple[float, ...]]:
        return [r.execute_ms for r in self.runs]

    @property
    def load(self) -> Load | None:
        """How contended its executions were (trust.py); None when no run measured it (an old manifest)."""
        measured = [r for r in self.runs if r.clean is not None]
        if not measured:
            return None
        return Load(sum(r.clean.count(False) for r in measured if r.clean), sum(len(r.clean or ()) for r in measured))

    @property
    def dropped(self) -> int:
        return sum(r.dropped for r in self.runs)


def side_from_job(run: RunRecord, device: str, model: str, labels: Sequence[str] | None = None) -> Side:
    """The traced runs of `model` on `device` in the run (optionally only `labels`)."""
    job = run.job
    dev = job.device(device)
    if dev is None:
        return Side(job.run_id, device, model, missing=f"device {device} is not in run {job.run_id}", blame=Blame.USAGE)
    result = dev.model(model)
    if result is None or result.status is ModelStatus.FAILED or not result.traced_runs:
        why = (result.error if result and result.error else None) or dev.error or "no process run completed"
        blame = (result.blame if result and result.blame else None) or dev.blame or Blame.INFRASTRUCTURE
        return Side(job.run_id, device, model, missing=why, blame=blame)
    # no execution of the model clean: every one is kept, as its reported figures keep them (results.py)
    every = not any(r.clean_execute_ms for r in result.traced_runs)
    runs = tuple(_side_run(run, r, every) for r in result.traced_runs if labels is None or r.label in labels)
    return Side(job.run_id, device, model, runs, verification=_verification(result),
                settings=model_settings(job, model, device), incomplete=side_gap(job, device, model),
                accuracy=result.accuracy, identities=side_identities(run, device, model), memory=result.memory,
                program=_program(run.root, job, model))


def _side_run(record: RunRecord, run: ProcessRun, every: bool = False) -> SideRun:
    """A process run as verdicts use it: its clean executions only when the runner measured contention
    (results/contention.py: `ProcessRun.clean`); every execution of a run recorded before that, or (`every`) of a model
    none of whose executions was clean."""
    etdump = next((record.root / a for a in run.artifacts if Path(a).name == ETDUMP_NAME), None)
    etdump = etdump if etdump is not None and etdump.is_file() else None
    if every or run.contention is None or not run.contention.wait_ms:  # every execution counts, none is dropped
        return SideRun(run.label, run.execute_ms, etdump, run.llm, record=record)
    kept = run.clean_execute_ms
    return SideRun(run.label, kept, etdump, run.llm, run.clean, len(run.execute_ms) - len(kept), record)


def _program(root: Path, job: Job, model: str) -> str | None:
    """The program a side ran, for the command that settles it: its .pte kept in the run directory, else its spec."""
    found = job.model_artifacts(model)
    if found is None:
        return None
    pte = root / found.pte if found.pte else None
    return str(pte) if pte is not None and pte.is_file() else found.spec


def _verification(result: ModelResult) -> VerificationStatus | None:
    return result.verification.status if result.verification else None


def pool(sides: Iterable[Side]) -> Side:
    """One side from several jobs of the same device and model: their runs together."""
    sides = list(sides)
    with_data = [s for s in sides if s.missing is None]
    first = sides[0]
    if not with_data:
        return first
    fail = any(s.verification is VerificationStatus.FAIL for s in with_data)
    gaps = [s.incomplete if len(sides) == 1 else f"{s.source}: {s.incomplete}" for s in with_data if s.incomplete]
    return Side("+".join(s.source for s in sides), first.device, first.model,
                tuple(r for s in with_data for r in s.runs),
                verification=VerificationStatus.FAIL if fail else with_data[-1].verification,
                settings=with_data[0].settings, incomplete="; ".join(gaps) or None, accuracy=with_data[-1].accuracy,
                identities=with_data[-1].identities, memory=with_data[-1].memory, program=with_data[-1].program)


@lru_cache(maxsize=128)  # a side is compared many times in benchmarks and --until-confident rounds
def per_op_runs(side: Side) -> OpSamples:
    """(event_block, op identity) -> (event_index, one array of samples per run), operators only."""
    if side.op_samples is not None:
        return side.op_samples
    if side.runs and all(r.record is not None for r in side.runs):
        found = recorded_op_samples([(r.record, r.label) for r in side.runs if r.record is not None],
                                    side.device, side.model, dict(side.identities))
        if found is not None:
            return clean_ops(found, [r.clean for r in side.runs])
    # A run directory written before samples.npz (or a model whose samples it lacks): the runs' ETDumps, read again.
    traced = [r for r in side.runs if r.etdump is not None]
    found = read_op_samples([r.etdump for r in traced], dict(side.identities)) if traced else OpSamples({})
    return clean_ops(found, [r.clean for r in traced])


def clean_ops(found: OpSamples, masks: Sequence[tuple[bool, ...] | None]) -> OpSamples:
    """Each op's samples of the clean executions only, run by run, where the run's mask lines up with the op's
    samples (one per execution); an op that runs several times per execution keeps every sample."""
    if not any(m is not None and not all(m) for m in masks):
        return found
    import numpy as np

    ops = {}
    for key, (index, runs) in found.ops.items():
        kept = [r[np.asarray(m)] if m is not None and len(m) == len(r) else r
                for r, m in zip(runs, list(masks) + [None] * (len(runs) - len(masks)), strict=False)]
        ops[key] = (index, kept)
    return OpSamples(ops, found.names)



"""The jobs of a night (nightly.py): the plan's specs per backend, each model exported and checked on its own before
its job (`ModelFailure` for one that cannot be), the runner of the jobs (on this host or on the farm), a fresh run
directory each, and each job recorded in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.artifacts.modelspec import parse_model_specs
from orchestrator.artifacts.pte_info import check_program
from orchestrator.base.errors import Blame, ConfigError, EtfarmError, ExportError, ModelSpecError, UsageError, blame_of, one_line
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.results.model import JobOptions
from orchestrator.run.engine.job import JobResult, run_job
from orchestrator.run.engine.sweep import NotExported, export_configurations
from orchestrator.run.rundir import new_run_id
from orchestrator.run.schedule import RunOrder
from orchestrator.store import Store
from orchestrator.store.ingest import job_record
from orchestrator.verdicts.pair_verdicts import PairVerdict
from orchestrator.verdicts.statistics import Verdict


@dataclass(frozen=True)
class ModelFailure:
    """A plan model, or one configuration of it (an export recipe), that could not be exported or loaded: that
    model's failure, not the night's."""

    model: str  # the model's name, or the configuration's (tiny_cnn-int8da-int4w)
    spec: str
    backend: str
    reason: str  # the exporter's error, one line
    blame: Blame
    recipe: str | None = None  # the configuration's export recipe; None: the model itself failed

    @classmethod
    def of_configuration(cls, lost: NotExported, backend: str) -> ModelFailure:
        """A configuration the job leaves out too (run/engine/sweep.py), as the night's failure of that configuration."""
        return cls(lost.name, lost.spec, backend, lost.reason, ExportError.blame, lost.recipe)

    @property
    def lowering(self) -> str:
        return self.backend + (f", recipe {self.recipe}" if self.recipe else "")

    @property
    def note(self) -> str:
        return f"model {self.model} ({self.spec}, {self.lowering}) NOT MEASURED: {self.reason}"

    def pairs(self, devices: Sequence[str]) -> tuple[PairVerdict, ...]:
        """Its (device, model) pairs: no data, never a regression (the night exits 3 for them)."""
        why = f"not exported ({self.lowering}): {self.reason}"
        return tuple(PairVerdict(d, self.model, self.model, Verdict.NO_DATA, reason=why, blame=self.blame)
                     for d in devices)


def exportable(specs: Sequence[Any], backend: str, own_runtimes: bool, progress: Progress,
                options: JobOptions) -> tuple[list[Any], list[ModelFailure]]:
    """The specs whose model exports and whose program loads, and the failures of the others, each exported on
    its own (the job exports them again: a cache hit). `own_runtimes`: every device runs the user's own
    ExecuTorch, which may have the llama:: custom ops (run/engine/job.own_runtimes). With export recipes each recipe is
    a configuration (run/engine/sweep.py): one that cannot export is that configuration's failure, and the job leaves
    it out too."""
    good, failed = [], []
    for spec in specs:
        try:
            models, _, lost = export_configurations([spec], backend, options, progress)
            for model in models:
                check_program(model.pte, custom_ops=own_runtimes)
        except EtfarmError as exc:  # the model's own failure; a KeyboardInterrupt still stops the night
            failed.append(ModelFailure(spec.name, spec.text, backend, one_line(str(exc)), blame_of(exc)))
            progress(f"{failed[-1].note}; the other models run")
            continue
        failed += [ModelFailure.of_configuration(lost_one, backend) for lost_one in lost]
        good.append(spec)
    return good, failed


def plan_job_specs(plan: NightlyPlan) -> dict[str, list[Any]]:
    """The plan's model specs per backend (a job each), resolved and named before anything runs, by
    `run`'s rule: the same model listed twice, or two models of one name, is a usage error."""
    jobs = {}
    for backend in dict.fromkeys(m.backend for m in plan.models):
        models = [m for m in plan.models if m.backend == backend]
        try:
            jobs[backend] = parse_model_specs([m.spec for m in models], [m.name for m in models],
                                              hint="list each model once, or give each its own name")
        except (UsageError, ModelSpecError) as exc:  # a spec that names no file, two models of one name
            raise ConfigError(plan.path, "models", str(exc)) from None
    return jobs


def record_job(store: Store, result: JobResult) -> None:
    """The job into the store from memory: its statistics and samples, no ETDump read again."""
    store.record_job(job_record(result.recorded, result.rundir.root, result.stats))


JobRunner = Callable[..., JobResult]  # (specs, backend, out, run id, devices[, order]) -> the job


def host_runner(plan: NightlyPlan, config: Path | None, progress: Progress) -> tuple[JobRunner, bool]:
    """The runner of the night's jobs on this host, and whether every device runs the user's own runtime."""
    inventory = load_inventory(plan.config or config)
    devices = inventory.select(list(plan.devices))  # every device of the plan is known before anything runs
    def run(specs: list[Any], backend: str, out: Path, run_id: str, names: list[str],
            order: RunOrder | None = None) -> JobResult:
        options = plan.options() if order is None else replace(plan.options(), order=order)
        return run_job(inventory.select(names), specs, backend=backend, options=options, out=out,
                       progress=progress, config_file=inventory.path, run_id=run_id)

    return run, bool(devices) and all(d.runtime for d in devices)


def farm_runner(plan: NightlyPlan, farm: Any, progress: Progress) -> tuple[JobRunner, bool]:
    """The runner of the night's jobs on the farm; its workers' runtimes are not known until the job runs, so
    a program needing the llama:: custom ops is left to the job to refuse."""
    from orchestrator.farm.client import run_distributed  # a night on this host never imports the farm's package

    def run(specs: list[Any], backend: str, out: Path, run_id: str, names: list[str],
            order: RunOrder | None = None) -> JobResult:
        options = plan.options() if order is None else replace(plan.options(), order=order)
        return run_distributed(names, specs, backend=backend, options=options, out=out, progress=progress,
                               farm=farm, run_id=run_id)

    return run, True


def new_dir(root: Path) -> tuple[Path, str]:
    """A fresh run directory under `root` named by the job's run id (and that id)."""
    for _ in range(10):
        run_id = new_run_id()
        if not (root / run_id).exists():
            return root / run_id, run_id
    raise EtfarmError(f"{root}: cannot find a free run directory name")

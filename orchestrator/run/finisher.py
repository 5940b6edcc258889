"""The end of each model on a device: verify its outputs, analyse its ETDumps, record it.

Nothing collected is lost: whatever ended the process-run loop (a failed run, a dead device,
Ctrl-C, a full host disk), every model keeps the process runs that finished, flagged by the
calibration (run/calibration.py), verified and analysed: `ok` with all of them, `partial` (with
the failure as its error) when some are missing; a model with none is not recorded (a resume
runs it all). Each model's ETDumps are read once, here (profiles/stat_rows.py `model_stats`), their samples of
contended executions left out (profiles/contended.py); its
rows and samples go to the job's statistics. The one finisher of both executors: a device session
runs it (on this host, or in a farm task on its worker), and the farm's client runs it for a model
whose task ended without a reply, over the runs the worker streamed (farm/executor.py).
See docs/architecture.md, "Faults: the job".
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.errors import Blame, EtfarmError
from orchestrator.profiles.phases import with_phases
from orchestrator.profiles.stat_rows import model_stats
from orchestrator.results.accuracy import output_accuracy
from orchestrator.results.footprint import model_memory
from orchestrator.results.model import JobOptions, ModelResult, ModelStatus, ProcessRun
from orchestrator.run.calibration import flag_runs
from orchestrator.run.clean_stats import clean_only, run_calls
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.job_stats import JobStats
from orchestrator.run.llm_verify import verify_generations
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.runner_contract import ETDUMP_NAME, OUTPUTS_NAME
from orchestrator.run.schedule import Order
from orchestrator.run.status import failure_blame
from orchestrator.run.verify import verify_outputs

log = logging.getLogger(__name__)


class ModelFinisher:
    def __init__(self, models: Sequence[ExportedModel], options: JobOptions, rundir: RunDirectory,
                 record: DeviceRecord, stats: JobStats, cancelled: threading.Event) -> None:
        self.models = models
        self.options = options
        self.rundir = rundir
        self.record = record
        self.stats = stats
        self.cancelled = cancelled
        self.say: Callable[[str], None] = record.say
        self.finished = False

    def finish(self, order: Order, failure: BaseException | None) -> None:
        """Record every model with the runs it has: complete (ok), some missing (partial, the failure
        as its error), none (nothing recorded: a resume runs it all)."""
        self.finished = True
        flagged_runs = flag_runs([run for _, run in order])
        expected = self.options.runs + self.options.untraced_runs
        for model in self.models:
            runs = [run for (name, _), run in zip(order, flagged_runs, strict=False) if name == model.name]
            if not runs:
                continue
            if len(runs) >= expected or failure is None:
                self._finish_model(model, runs, ModelStatus.OK, None, None)
                continue
            error = str(failure) if isinstance(failure, EtfarmError) else f"{type(failure).__name__}: {failure}"
            interrupted = self.cancelled.is_set() or not isinstance(failure, Exception)  # Ctrl-C, or what it cut
            blame = failure_blame(failure, interrupted=interrupted)
            try:
                self._finish_model(model, runs, ModelStatus.PARTIAL, error, blame)
            except Exception as exc:  # noqa: BLE001 - the first failure is the one to report; the runs stay on disk
                log.debug("could not analyse the partial runs of %s on %s: %s", model.name, self.record.name, exc)
                self.record.model(ModelResult(model.name, ModelStatus.PARTIAL, tuple(runs), None, error, blame))

    def _finish_model(self, model: ExportedModel, runs: list[ProcessRun], status: ModelStatus, error: str | None,
                      blame: Blame | None) -> None:
        local_dir = self.rundir.model_dir(self.record.name, model.name)
        traced_dirs = [local_dir / r.label for r in runs if r.traced]
        outputs = [d / OUTPUTS_NAME for d in traced_dirs if (d / OUTPUTS_NAME).is_file()]
        accuracy = None
        if model.workload.generation is not None:  # an LLM: its tokens against the eager model's
            verification = verify_generations(model.llm_reference, runs)
        else:
            verification = verify_outputs(model.reference_outputs, outputs)
            accuracy = output_accuracy(model.eager_outputs, outputs)  # a recipe's: against the fp32 eager model
        self.say(f"{model.name}: verification {verification.status}: {verification.detail}"
                 + (f" ({status}: {len(runs)} run(s) kept)" if status is not ModelStatus.OK else ""))
        if traced_dirs:
            stats = model_stats(self.record.name, model.name, [d / ETDUMP_NAME for d in traced_dirs], model.etrecord,
                                model.pte)
            stats = with_phases(stats, run_calls(runs))  # an LLM's ops split by prefill and decode, over every call
            stats = clean_only(stats, runs)
            if not self.record.closed:  # given up by the watchdog: its statistics were taken without these
                self.stats.add(stats)
        self.record.model(ModelResult(model.name, status, tuple(runs), verification, error, blame, accuracy,
                                      memory=model_memory(runs)))

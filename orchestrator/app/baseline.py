"""Which earlier run a run is compared with: `last-good`, or a named run.

`last-good` for one (device, model) of run B is the newest stored run, older than B, that
- measured a model of the same NAME on the same device (by name, not by content hash: a
  changed model file is exactly what a nightly must catch),
- with the same settings (likeness.py: backend, iterations, warmup and CPU threads, and for an LLM the
  same prompt and generation length; the number of process runs may differ: the statistics account for it),
- where that device and model succeeded (every process run: a `partial` model is not a baseline, nor
  is a job that was interrupted or is still running) and its outputs were not wrong,
- and that no verdict marked as regressed. Verdicts are recorded beside the run, in
  `DIR/verdicts.json` (recorded.py `record_verdicts`), by `nightly`: a night that regressed is never
  the next night's baseline, so a regression keeps failing until it is fixed or accepted
  (by naming a baseline run id).
- Of those, a night whose pair was left `inconclusive` (its confirmation included) is passed over for an older
  night that was judged, among the newest JUDGED_WINDOW nights (a night's own job; its confirmation jobs carry
  the same verdict and are not counted): a night that could not judge a step would otherwise carry
  it into every later night's baseline (a +5 % step then compares with itself from the next night on). When
  none of them was judged, the newest good run. The series and the noise floor still read every good run.

Runs are found through the results store (orchestrator.store); a stored run whose directory is
gone is skipped (its per-run samples are needed, and its verdicts.json says whether it regressed).
The same good runs are the (device, model, settings) series (`series_history`, likeness.SeriesKey): the
nightly judges the night against it (series.py), and its replicate jobs give the automatic noise floor
(`history_noise_finder`, methods in noise.py and series.py). `compare_refs` is `etfarm compare [A] [B]`'s policy:
which runs the references name, and what B is compared with.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

from orchestrator.base.errors import DataError, UsageError, one_line
from orchestrator.results.model import DeviceStatus, Job, JobStatus, ModelStatus, VerificationStatus
from orchestrator.results.record import RunRecord
from orchestrator.store import Store, open_store, resolve_run, store_path
from orchestrator.verdicts.compare import (
    BaselineFinder,
    Comparison,
    StatesFinder,
    check_common,
    compare_against,
    compare_jobs,
    side_from_job,
)
from orchestrator.verdicts.device_states import WINDOW as STATES_WINDOW
from orchestrator.verdicts.device_states import DeviceStates, device_states
from orchestrator.verdicts.likeness import SeriesKey
from orchestrator.verdicts.noise import WINDOW, NoiseFinder, NoiseFloor
from orchestrator.verdicts.recorded import marked_regressed, marked_unjudged
from orchestrator.verdicts.series import WINDOW as SERIES_WINDOW
from orchestrator.verdicts.series import SeriesPoint, replicate_floor
from orchestrator.verdicts.statistics import VerdictSettings

LAST_GOOD = "last-good"
JUDGED_WINDOW = 10  # nights passed over at most for one that judged its pair (a device never quiet: the newest)
_SCAN_LIMIT = 200  # stored runs looked at per (device, model), newest first


def _good(run: RunRecord, device: str, model: str) -> bool:
    job = run.job
    if job.status in (JobStatus.RUNNING, JobStatus.INTERRUPTED):  # stopped part-way: partial data is no baseline
        return False
    dev = job.device(device)
    result = dev.model(model) if dev else None
    if dev is None or dev.status is DeviceStatus.INTERRUPTED or result is None or result.status is not ModelStatus.OK \
            or not result.traced_runs:
        return False
    if result.verification is not None and result.verification.status is VerificationStatus.FAIL:
        return False
    return not marked_regressed(run, device, model)


def good_history(store: Store, job_b: Job, device: str, model: str) -> Iterator[RunRecord]:
    """The stored good runs of (device, model) older than `job_b` with its settings, newest first.

    `last-good` is the first of them; the noise floor (noise.py) is estimated from the first
    `noise.WINDOW`."""
    wanted = SeriesKey.of(job_b, device, model)
    for run in store.jobs(model=model, device=device, limit=_SCAN_LIMIT):
        if run.run_id == job_b.run_id or run.started > job_b.started or run.run_dir is None:
            continue
        record = RunRecord(run.run_dir)
        if not record.present:
            continue
        job = record.job
        if wanted.matches(SeriesKey.of(job, device, model)) and _good(record, device, model):
            yield record


def last_good_finder(store: Store, job_b: Job) -> BaselineFinder:
    """`last-good` for each (device, model) of `job_b`, looked up in `store`: the newest good night that judged the
    pair (module docstring), else the newest good run."""
    def find(device: str, model: str) -> RunRecord | None:
        newest, nights = None, 0
        for run in good_history(store, job_b, device, model):
            newest = newest or run
            if run.job.confirms(model):  # its night's own job carries the same verdict
                continue
            if not marked_unjudged(run, device, model):
                return run
            nights += 1
            if nights == JUDGED_WINDOW:
                break
        return newest

    return find


def series_history(store: Store, job_b: Job, device: str, model: str, window: int = SERIES_WINDOW) -> list[SeriesPoint]:
    """The newest `window` good stored jobs of the series of (device, model) in `job_b`, oldest first
    (series.py judges them with the night; their replicates give the noise floor). One point a night: a night's
    confirmation jobs (interleaved with `<model>-baseline`) measured that night again, and counting them would
    weigh a night by how many jobs it took to settle (a night wholly in a fast state, pooled, moved the level)."""
    nights = (run for run in good_history(store, job_b, device, model) if not run.job.confirms(model))
    history = list(itertools.islice(nights, window))
    return [series_point(run, device, model) for run in reversed(history)]


def series_point(run: RunRecord, device: str, model: str) -> SeriesPoint:
    job = run.job
    artifacts = job.model_artifacts(model)
    return SeriesPoint(job.run_id, job.started, artifacts.git_commit if artifacts else None,
                       artifacts.content_hash if artifacts else None, side_from_job(run, device, model))


def history_noise_finder(store: Store, job_b: Job, center: str, window: int = WINDOW) -> NoiseFinder:
    """The automatic noise floor of each (device, model) of `job_b`: the spread between replicate jobs among the
    newest `window` good stored runs of its series (series.replicate_floor, noise.estimate_replicate_floor)."""
    def find(device: str, model: str) -> NoiseFloor:
        return replicate_floor(series_history(store, job_b, device, model, window), center)

    return find


def device_states_finder(store: Store | None, *names: str) -> StatesFinder:
    """What each (device, model)'s newest stored jobs showed of its speed states (device_states.py); without a store,
    nothing yet (the pair's own runs still count). `names`: the model's names in the store when it goes by more than
    one (run --ab's two programs of one model: `mlp-a`, `mlp-b`); default, the name asked for."""
    def find(device: str, model: str) -> DeviceStates:
        known = DeviceStates.nothing_seen(device)
        if store is None:
            return known
        for name in names or (model,):
            known = device_states(known, store.run_medians(device, name, STATES_WINDOW))
        return known

    return find


def named_finder(store: Store | None, ref: str, what: str = "baseline") -> BaselineFinder:
    """One baseline run for every pair: a run directory, or a stored run id (`what` names it in errors)."""
    found = named_run(store, ref, what)
    return lambda device, model: found


def named_run(store: Store | None, ref: str, what: str = "baseline") -> RunRecord:
    """The run a reference names: a run directory, or a stored run id whose directory is still there (its manifest
    read now: one that is not whole is refused before anything runs)."""
    run = RunRecord(Path(ref).expanduser())
    if not run.present:
        if store is None or not store.has_job(ref):
            raise UsageError(f"{what} {ref!r}: neither a run directory nor a stored run id")
        found = store.run_dir(ref)
        if found is None or not RunRecord(found).present:
            raise UsageError(f"{what} {ref!r}: its run directory is gone")
        run = RunRecord(found)
    run.job  # noqa: B018 - read now, as the reference is named
    return run


def compare_refs(a: str | None, b: str | None, settings: VerdictSettings, *, baseline: str = LAST_GOOD,
                 store: Path | None = None, per_op: bool = True) -> Comparison:
    """`etfarm compare [A] [B]`: A and B are run directories or stored run ids. Given both (and no
    automatic noise floor), B against A, no store needed; given A alone, it is B, compared with
    `baseline` (last-good per device and model, or a run); given neither, the newest stored run
    is B. The automatic noise floor (`settings.auto_noise_floor`) comes from the store, and so does what the device's
    jobs of each model showed of its speed states, when there is one (device_states.py: between separate jobs, a change
    a state step could make is not judged)."""
    auto = settings.auto_noise_floor
    if a is not None and b is not None and not auto:
        run_a, run_b = _resolve(a, store, "A"), _resolve(b, store, "B")
        with contextlib.ExitStack() as stack:
            states = device_states_finder(store_if_readable(store, stack))
            return compare_jobs(run_a, run_b, settings, per_op=per_op, states=states)
    if not store_path(store).is_file():
        need = "--noise-floor auto needs" if auto else "compare needs A and B run directories, or"
        raise UsageError(f"{need} a results store (none at {store_path(store)})")
    with open_store(store) as opened:
        if a is not None and b is not None:
            run_a, run_b = _resolve(a, store, "A"), _resolve(b, store, "B")
            check_common(run_a, run_b)
            finder, label = named_finder(opened, str(run_a.root)), run_a.job.run_id
        else:
            run_b = _resolve(a, store, "B") if a is not None else _newest(opened)
            label = baseline
            if baseline == LAST_GOOD:
                finder = last_good_finder(opened, run_b.job)
            else:  # a baseline the user names must share some (device, model) with B
                check_common(named_run(opened, baseline), run_b)
                finder = named_finder(opened, baseline)
        noise = history_noise_finder(opened, run_b.job, settings.center) if auto else None
        return compare_against(run_b, finder, settings, per_op=per_op, a_label=label, noise=noise,
                               states=device_states_finder(opened))


def store_if_readable(store: Path | None, stack: contextlib.ExitStack) -> Store | None:
    """The store, open in `stack`, for what it shows of speed states; None when there is none or it cannot be read
    (then said on stderr: two named runs, or run --ab's jobs, are judged without it, as before there was a store)."""
    if not store_path(store).is_file():
        return None
    try:
        return stack.enter_context(open_store(store))
    except DataError as exc:
        print(f"warning: {one_line(str(exc))}; speed states from the two runs alone", file=sys.stderr)
        return None


def _resolve(ref: str, store: Path | None, which: str) -> RunRecord:
    try:
        return RunRecord(resolve_run(ref, store))
    except UsageError as exc:
        raise UsageError(f"{which}: {exc}") from None


def _newest(opened: Store) -> RunRecord:
    runs = opened.jobs(limit=1)
    if not runs:
        raise UsageError(f"the store {opened.path} holds no runs; give run directories")
    if runs[0].run_dir is None:
        raise UsageError(f"newest stored run {runs[0].run_id}: its run directory is gone")
    return RunRecord(runs[0].run_dir)

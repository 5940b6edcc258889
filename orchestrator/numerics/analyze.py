"""Numerical debugging of a run directory: per device and model, which op diverges, and where.

For every device and model of a run whose traced runs pulled a debug buffer (`--numerics`):

- against the AOT reference captured at export time: Inspector's `calculate_numeric_gap`, rows
  in the same order with the same gaps (`gaps_against_reference`), all three metrics at once;
- against a reference device (default: the first device of the job): the runtime outputs of
  the same program, matched by runtime debug handle (`gaps_between_devices`);
- each op is named by its module path and model source line (the reference graph's
  `nn_module_stack` and stack trace, else the ETRecord's edge graph), and judged with one
  metric and threshold; divergence starts at the first op along the graph that crosses it.

Every run is compared; an op's gap is its worst over the runs, and `runs_identical` says whether
the runs logged bit-identical intermediate outputs. numpy only: no torch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError, DataError, UsageError
from orchestrator.numerics.mapping import (
    find_op_names,
    map_runtime_aot_intermediate_outputs,
    unwrap,
)
from orchestrator.numerics.metrics import DEFAULT_THRESHOLDS, Gap, Metric, compare, crosses, worst
from orchestrator.numerics.model import (
    AGAINST_AOT,
    Comparison,
    ModelNumerics,
    NumericsReport,
    OpGap,
)
from orchestrator.numerics.sources import (
    AotReference,
    RuntimeOutputs,
    load_reference,
    runtime_outputs,
)
from orchestrator.profiles.etrecord import ETRecordInfo, load_etrecord
from orchestrator.results.model import Job, ModelArtifacts, ModelResult
from orchestrator.results.record import RunRecord
from orchestrator.run.runner_contract import DEBUG_NAME, ETDUMP_NAME

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class RawGap:
    """One compared op before judgement."""

    aot_handle: tuple[int, ...]
    runtime_handle: tuple[int, ...]
    aot_ops: tuple[str, ...]
    runtime_ops: tuple[str, ...]
    gaps: tuple[Gap, ...]


def gaps_against_reference(reference: AotReference, runtime: RuntimeOutputs) -> list[RawGap]:
    """Inspector's `calculate_numeric_gap` rows (MSE, L1 and SNR at once) for one run."""
    rows = []
    mapping = map_runtime_aot_intermediate_outputs(reference.outputs, runtime.outputs)
    for (aot_handle, aot_output), (runtime_handle, runtime_output) in mapping.items():
        aot_output = unwrap(aot_output)
        if aot_output is None or runtime_output is None:
            continue
        if isinstance(aot_output, Sequence) and len(aot_output) > 1:
            continue
        try:
            gaps = compare(aot_output, runtime_output)
        except (ValueError, TypeError):  # shapes that cannot be compared: Inspector raises, we skip the op
            gaps = (Gap(math.nan, math.nan, math.nan),)
        rows.append(RawGap(aot_handle, runtime_handle, tuple(find_op_names(aot_handle, reference.op_names)),
                           tuple(find_op_names(runtime_handle, runtime.op_names)), gaps))
    return rows


def gaps_between_devices(reference: RuntimeOutputs, other: RuntimeOutputs, aot: AotReference | None) -> list[RawGap]:
    """Each runtime output of `other` against the same handle's output on the reference device."""
    rows = []
    for handle, (ref_value, _) in reference.outputs.items():
        if handle not in other.outputs:
            continue
        a, b = _leaves(ref_value), _leaves(other.outputs[handle][0])
        if len(a) != len(b) or not a:
            continue
        gaps = []
        for x, y in zip(a, b, strict=False):
            try:
                gaps.append(compare(x, y)[0])
            except (ValueError, TypeError):
                gaps.append(Gap(math.nan, math.nan, math.nan))
        aot_ops = tuple(find_op_names(handle, aot.op_names)) if aot is not None else ()
        rows.append(RawGap(handle, handle, aot_ops, tuple(find_op_names(handle, reference.op_names)), tuple(gaps)))
    return rows


def analyze_run(run: RunRecord, metric: Metric = Metric.MSE, threshold: float | None = None,
                reference_device: str | None = None) -> NumericsReport:
    """The numerics report of a run (see the module docstring)."""
    return analyze_job(run.job, run.root, metric, threshold, reference_device)


def analyze_job(job: Job, root: Path, metric: Metric = Metric.MSE, threshold: float | None = None,
                reference_device: str | None = None) -> NumericsReport:
    """The numerics report of a job whose results model is in memory (`etfarm run --numerics`), files in `root`."""
    threshold = DEFAULT_THRESHOLDS[metric] if threshold is None else threshold
    present = {d.name for d in job.devices}
    devices = [name for name in job.config.devices if name in present] + sorted(present - set(job.config.devices))
    if reference_device is not None and reference_device not in devices:
        raise UsageError(f"--reference-device: {reference_device!r} is not a device of run {job.run_id} "
                         f"(devices: {', '.join(devices) or 'none'})")
    if reference_device is None and len(devices) > 1:
        reference_device = devices[0]
    loaded: dict[tuple[str, str], tuple[list[str], list[RuntimeOutputs], str | None]] = {}
    references: dict[str, tuple[AotReference | None, str | None]] = {}
    for device, model in job.results():
        loaded[(device.name, model.name)] = _load_runs(root, device.name, model, job.model_artifacts(model.name))
    models = []
    for device, model in job.results():
        artifacts = job.model_artifacts(model.name)
        if model.name not in references:
            references[model.name] = _reference_for(artifacts)
        reference, reference_error = references[model.name]
        labels, runs, error = loaded[(device.name, model.name)]
        try:
            etrecord = load_etrecord(artifacts.etrecord) if artifacts and artifacts.etrecord else None
            models.append(_model_numerics(device.name, model, labels, runs, error, reference, reference_error, etrecord,
                                          loaded.get((reference_device, model.name)) if reference_device else None,
                                          reference_device, metric, threshold))
        except DataError as exc:  # a damaged file fails this device and model only, and says which file
            models.append(ModelNumerics(device.name, model.name, error=str(exc)))
    return NumericsReport(job.run_id, metric, threshold, reference_device, tuple(models))


def _load_runs(root: Path, device: str, model: ModelResult, artifacts: ModelArtifacts | None
               ) -> tuple[list[str], list[RuntimeOutputs], str | None]:
    if artifacts is None or not artifacts.etrecord:
        return [], [], "no ETRecord for this model: intermediate outputs cannot be linked to ops"
    labels = [r.label for r in model.traced_runs if (root / device / model.name / r.label / DEBUG_NAME).is_file()]
    if not labels:
        return [], [], "no debug buffer was pulled (run with --numerics)"
    runs = []
    try:
        etrecord = load_etrecord(artifacts.etrecord)
        written = {r.label: r.runner.get("debug_buffer_used") for r in model.traced_runs}
        for label in labels:
            folder = root / device / model.name / label
            used = written.get(label)
            runs.append(runtime_outputs(folder / ETDUMP_NAME, folder / DEBUG_NAME, etrecord,
                                        used if isinstance(used, int) else None))
    except DataError as exc:
        return labels, [], str(exc)
    return labels, runs, None


def _reference_for(artifacts: ModelArtifacts | None) -> tuple[AotReference | None, str | None]:
    path = artifacts.numerics_reference if artifacts else None
    if not path or not Path(path).is_file():
        return None, "no AOT reference for this model (exported before numerics, or the replay failed at export)"
    try:
        return load_reference(path), None
    except DataError as exc:
        return None, str(exc)


def _model_numerics(device: str, model: ModelResult, labels: list[str], runs: list[RuntimeOutputs], error: str | None,
                    reference: AotReference | None, reference_error: str | None, etrecord: ETRecordInfo | None,
                    ref_device_runs: tuple[list[str], list[RuntimeOutputs], str | None] | None,
                    reference_device: str | None, metric: Metric, threshold: float) -> ModelNumerics:
    verification = model.verification
    base = ModelNumerics(device, model.name, verification=verification.status.value if verification else None,
                         verification_detail=verification.detail if verification else None)
    if error is not None or not runs:
        return replace(base, error=error or "no runs to compare")
    comparisons = []
    if reference is None:
        comparisons.append(Comparison(AGAINST_AOT, runs=tuple(labels), error=reference_error))
    else:
        per_run = [gaps_against_reference(reference, run) for run in runs]
        ops = _judge(_worst_over_runs(per_run), reference, etrecord, metric, threshold)
        comparisons.append(Comparison(AGAINST_AOT, ops, tuple(labels), worst_index=_worst_index(ops, metric)))
    if reference_device is not None and reference_device != device and ref_device_runs is not None:
        ref_labels, ref_runs, ref_error = ref_device_runs
        against = f"device:{reference_device}"
        if ref_error is not None or not ref_runs:
            comparisons.append(Comparison(against, error=f"reference device {reference_device}: {ref_error or 'no runs'}"))
        else:
            ops = _judge(gaps_between_devices(ref_runs[0], runs[0], reference), reference, etrecord, metric, threshold)
            comparisons.append(Comparison(against, ops, (f"{reference_device}/{ref_labels[0]}", f"{device}/{labels[0]}"),
                                          worst_index=_worst_index(ops, metric)))
    return replace(base, comparisons=tuple(comparisons), runs_identical=_identical(runs))


def _worst_index(ops: tuple[OpGap, ...], metric: Metric) -> int | None:
    known = [op for op in ops if not math.isnan(op.value)]
    if not known:
        return None
    pick = min if metric is Metric.SNR else max
    return pick(known, key=lambda op: op.value).index


def _worst_over_runs(per_run: list[list[RawGap]]) -> list[RawGap]:
    rows = list(per_run[0])
    for other in per_run[1:]:
        if [(r.aot_handle, r.runtime_handle) for r in other] != [(r.aot_handle, r.runtime_handle) for r in rows]:
            raise AnalysisError("the runs of this device map to different ops: were they made from the same program?")
        rows = [replace(r, gaps=tuple(_worse(a, b) for a, b in zip(r.gaps, o.gaps, strict=True)))
                for r, o in zip(rows, other, strict=True)]
    return rows


def _worse(a: Gap, b: Gap) -> Gap:
    return Gap(_nanmax(a.mse, b.mse), _nanmax(a.l1, b.l1), -_nanmax(-a.snr, -b.snr))


def _nanmax(x: float, y: float) -> float:
    return y if math.isnan(x) else x if math.isnan(y) else max(x, y)


def _judge(rows: list[RawGap], reference: AotReference | None, etrecord: ETRecordInfo | None, metric: Metric,
           threshold: float) -> tuple[OpGap, ...]:
    out = []
    for index, row in enumerate(rows):
        value = worst(row.gaps, metric)
        module_path, module_type, trace = _origin(row, reference, etrecord)
        out.append(OpGap(index, row.aot_handle, row.runtime_handle, row.aot_ops, row.runtime_ops, row.gaps, value,
                         crosses(value, metric, threshold), module_path, module_type, source_line(trace), trace))
    return tuple(out)


def _origin(row: RawGap, reference: AotReference | None, etrecord: ETRecordInfo | None
            ) -> tuple[str | None, str | None, str | None]:
    """Module path, module type and stack trace of the op that produced the compared output."""
    if reference is not None:
        for op in reversed(row.aot_ops):
            stack = reference.module_stacks.get(op)
            trace = reference.stack_traces.get(op)
            if stack or trace:
                path, kind = stack[-1] if stack else (None, None)
                return path, kind, trace
    if etrecord is not None and row.runtime_handle:
        for node in reversed(etrecord.nodes_by_handle.get(row.runtime_handle[-1], ())):
            if node.nn_module_stack or node.stack_trace:
                path, kind = list(node.nn_module_stack.values())[-1] if node.nn_module_stack else (None, None)
                return path, kind, node.stack_trace
    return None, None, None


def source_line(trace: str | None) -> str | None:
    """`file.py:line` of the innermost frame of a stack trace that is model code, not torch's."""
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    own = [f for f in frames if "/torch/" not in f[0] and "/site-packages/torch" not in f[0]]
    path, line = (own or frames)[-1]
    return f"{Path(path).name}:{line}"


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value] if value is not None else []


def _identical(runs: list[RuntimeOutputs]) -> bool:
    first = runs[0].outputs
    for other in runs[1:]:
        if first.keys() != other.outputs.keys():
            return False
        for handle, (value, _) in first.items():
            a, b = _leaves(value), _leaves(other.outputs[handle][0])
            if len(a) != len(b) or not all(_same(x, y) for x, y in zip(a, b, strict=False)):
                return False
    return True


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    return bool(x == y)


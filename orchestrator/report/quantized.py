"""The report's quantized models: a model under several export recipes, per device (README "Quantized models").

For each model of a job lowered with export recipes (`--recipe fp32,int8-static`), grouped across its recipes:
per device, each recipe's end-to-end p50 and its speed-up against the fp32 recipe with the 95 % interval of
the report's one statistic (ratios.py: process runs resampled), the program's size, peak memory, and the
accuracy its outputs paid against the fp32 eager model (run/accuracy.py); per device the same layers under
each recipe (profiles/layers.py: the kernels of a module summed, whatever XNNPACK calls them) and their
speed-ups; per quantized recipe, which layer loses accuracy (numerics/layer_accuracy.py). Computed once
here; quantized_page.py only lays it out. Self-contained: the report's other builders do not know it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from orchestrator.numerics.layer_accuracy import LayerAccuracy, layer_accuracy
from orchestrator.profiles.layers import layer_keys, row_op
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.model import Chart, Interval
from orchestrator.report.quantized_chart import latency_accuracy_chart
from orchestrator.report.ratios import p50, ratio_with_ci
from orchestrator.run.accuracy import Accuracy
from orchestrator.run.results import Job, ModelArtifacts, ModelResult

EXECUTE_BLOCK = "Execute"


@dataclass(frozen=True)
class RecipeRow:
    """One recipe of a model on one device."""

    recipe: str
    model: str  # the job's model name at this recipe
    p50_ms: float | None
    speedup: float | None  # the baseline recipe's p50 over this one's (> 1: faster)
    speedup_ci: Interval | None
    program_bytes: int | None
    peak_rss_kb: int | None
    accuracy: Accuracy | None
    verification: str  # pass / fail / skipped / -


@dataclass(frozen=True)
class LayerSpeed:
    """One layer of the model on one device: its time under each recipe (kernels summed) and the speed-up."""

    layer: str  # module path, or "(model)"
    ops: str  # the op kinds it ran under the recipes, e.g. "Convolution, Transpose"
    p50_ms: tuple[float | None, ...]  # per recipe, in the group's order
    speedup: tuple[float | None, ...]  # baseline's time over each recipe's


@dataclass(frozen=True)
class DeviceRecipes:
    device: str
    rows: tuple[RecipeRow, ...]
    layers: tuple[LayerSpeed, ...] = ()


@dataclass(frozen=True)
class RecipeGroup:
    """One model spec (at one sweep point) under its recipes."""

    name: str  # the model's name without the recipe (tiny_cnn)
    recipes: tuple[str, ...]
    baseline: str | None  # the recipe speed-ups are against: fp32, else the first that does not quantize
    calibration: tuple[tuple[str, str], ...]  # (recipe, how it calibrated), quantizing recipes only
    devices: tuple[DeviceRecipes, ...]
    layer_accuracy: tuple[tuple[str, LayerAccuracy], ...] = ()  # (recipe, its layers against fp32 eager)
    chart: Chart | None = None  # latency against SNR per device


def recipe_groups(job: Job, rows: Sequence[StatRow], devices: Sequence[str],
                  colours: Mapping[str, str] | None = None) -> tuple[RecipeGroup, ...]:
    """Every model of the job lowered with a recipe, grouped across recipes, devices in the report's order; with
    `colours` (the report's, per device), each group's chart."""
    groups: dict[tuple[str, str], list[ModelArtifacts]] = defaultdict(list)
    for artifacts in job.models:
        if artifacts.recipe is not None:
            base = artifacts.name.replace(f"-{artifacts.recipe.label}", "", 1) if len(job.config.options.recipes) > 1 \
                else artifacts.name
            groups[(artifacts.spec, base)].append(artifacts)
    by_model: dict[tuple[str, str], list[StatRow]] = defaultdict(list)
    for row in rows:
        by_model[(row.device, row.model)].append(row)
    made = tuple(_group(job, base, members, by_model, devices) for (_, base), members in groups.items())
    return made if colours is None else tuple(replace(g, chart=latency_accuracy_chart(g, colours)) for g in made)


def _group(job: Job, base: str, members: list[ModelArtifacts], rows: dict[tuple[str, str], list[StatRow]],
           devices: Sequence[str]) -> RecipeGroup:
    baseline = next((m for m in members if m.recipe and m.recipe.label == "fp32"), None) or \
        next((m for m in members if m.recipe and not m.recipe.quantized), None)
    per_device = []
    for name in devices:
        device = job.device(name)
        results = {m.name: device.model(m.name) if device else None for m in members}
        if not any(results.values()):
            continue
        base_result = results.get(baseline.name) if baseline else None
        per_device.append(DeviceRecipes(name, tuple(_row(m, results[m.name], base_result) for m in members),
                                        _layers(members, baseline, [rows.get((name, m.name), []) for m in members])))
    accuracy = tuple((m.recipe.label, layer_accuracy(m.name, m.numerics_reference, m.eager_reference))
                     for m in members if m.recipe and m.recipe.quantized)
    return RecipeGroup(base, tuple(m.recipe.label for m in members if m.recipe), baseline.recipe.label if baseline
                       and baseline.recipe else None, tuple((m.recipe.label, calibration_words(m)) for m in members
                                                            if m.recipe and m.recipe.quantized),
                       tuple(per_device), accuracy)


def calibration_words(artifacts: ModelArtifacts) -> str:
    """How a quantizing recipe calibrated, in words (a single batch of example inputs is said to be weak)."""
    recipe = artifacts.recipe
    if recipe is None or recipe.calibration_batches is None:
        return "no calibration (weights quantized ahead of time, activations at run time)"
    batches = f"{recipe.calibration_batches} batch{'es' if recipe.calibration_batches != 1 else ''}"
    if recipe.calibration == "example inputs":
        return f"{batches}: the example inputs alone, a weak calibration (return a CalibratedModel with batches)"
    return f"{batches} from the {'recipe' if recipe.calibration == 'recipe' else 'model file'}"


def _row(artifacts: ModelArtifacts, result: ModelResult | None, baseline: ModelResult | None) -> RecipeRow:
    label = artifacts.recipe.label if artifacts.recipe else "-"
    if result is None:
        return RecipeRow(label, artifacts.name, None, None, None, None, None, None, "not run")
    runs = [r.execute_ms for r in result.traced_runs]
    speedup, ci = ratio_with_ci([r.execute_ms for r in baseline.traced_runs], runs) if baseline else (None, None)
    return RecipeRow(label, artifacts.name, p50(runs), speedup, ci, result.program_bytes, result.peak_rss_kb,
                     result.accuracy, result.verification.status.value if result.verification else "-")


def _layers(members: list[ModelArtifacts], baseline: ModelArtifacts | None,
            rows: list[list[StatRow]]) -> tuple[LayerSpeed, ...]:
    """Per layer (module), the p50s of its kernels summed under each recipe, and the speed-ups against the baseline."""
    times: list[dict[str, float]] = []
    kinds: dict[str, dict[str, None]] = defaultdict(dict)
    for model_rows in rows:
        executed = sorted((r for r in model_rows if r.event_block == EXECUTE_BLOCK), key=lambda r: r.event_index)
        summed: dict[str, float] = defaultdict(float)
        for row, key in zip(executed, layer_keys(row_op(r) for r in executed), strict=True):
            if key is not None and row.p50_ms is not None:
                summed[key.layer] += row.p50_ms
                kinds[key.layer][key.op] = None
        times.append(summed)
    at = members.index(baseline) if baseline in members else None
    out = []
    for layer in dict.fromkeys(layer for summed in times for layer in summed):
        values = tuple(summed.get(layer) for summed in times)
        base = values[at] if at is not None else None
        out.append(LayerSpeed(layer, ", ".join(kinds[layer]), values,
                              tuple(base / v if base and v else None for v in values)))
    return tuple(out)

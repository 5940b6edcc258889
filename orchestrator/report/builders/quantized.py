"""The report's quantized models: a model under several export recipes, per device (docs/how-to/quantized.md).

For each model of a job lowered with export recipes (`--recipe fp32,int8-static`), grouped across its recipes:
per device, each recipe's end-to-end p50 and its speed-up against the fp32 recipe with the 95 % interval of
the report's one statistic (ratios.py: process runs resampled), the program's size, peak memory, and the
accuracy its outputs paid against the fp32 eager model (results/accuracy.py); per device the same layers under
each recipe (profiles/op_identity.py: the kernels of a module summed, whatever XNNPACK calls them) and their
speed-ups; per quantized recipe, which layer loses accuracy (numerics/layer_accuracy.py). Computed once
here into report/model/quantized.py's types; page/quantized.py lays it out and render/charts.py draws its
latency-against-accuracy chart. Self-contained: the report's other builders do not know it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from orchestrator.numerics.layer_accuracy import layer_accuracy
from orchestrator.profiles.op_identity import MODEL
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ops import below_resolution
from orchestrator.report.builders.ratios import p50, ratio_with_ci
from orchestrator.report.model import DeviceRecipes, LayerSpeed, RecipeGroup, RecipeRow
from orchestrator.results.model import Job, ModelArtifacts, ModelResult

EXECUTE_BLOCK = "Execute"


def recipe_groups(job: Job, rows: Sequence[StatRow], devices: Sequence[str]) -> tuple[RecipeGroup, ...]:
    """Every model of the job lowered with a recipe, grouped across recipes, devices in the report's order."""
    groups: dict[tuple[str, str], list[ModelArtifacts]] = defaultdict(list)
    for artifacts in job.models:
        if artifacts.recipe is not None:
            base = artifacts.name.replace(f"-{artifacts.recipe.label}", "", 1) if len(job.config.options.recipes) > 1 \
                else artifacts.name
            groups[(artifacts.spec, base)].append(artifacts)
    by_model: dict[tuple[str, str], list[StatRow]] = defaultdict(list)
    for row in rows:
        by_model[(row.device, row.model)].append(row)
    return tuple(_group(job, base, members, by_model, devices) for (_, base), members in groups.items())


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
        for row in executed:
            key = row.identity
            if key.basis == MODEL and row.p50_ms is not None:  # a layer op of the model, whatever its kernel's name
                summed[key.layer] += row.p50_ms
                kinds[key.layer][key.op_name] = None
        times.append(summed)
    at = members.index(baseline) if baseline in members else None
    out = []
    for layer in dict.fromkeys(layer for summed in times for layer in summed):
        values = tuple(summed.get(layer) for summed in times)
        base = values[at] if at is not None else None
        out.append(LayerSpeed(layer, ", ".join(kinds[layer]), values,
                              tuple(base / v if base and v else None for v in values),
                              tuple(v is not None and below_resolution(v, True) for v in values)))
    return tuple(out)

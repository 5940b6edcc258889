"""The run page's "Quantized models" section: each model's recipes side by side per device, its layers' speed-ups
and the accuracy paid (docs/how-to/quantized.md). Lays out report/builders/quantized.py's groups and places
the latency-against-accuracy chart render/charts.py drew; computes nothing."""

from __future__ import annotations

from orchestrator.numerics.layer_accuracy import LayerAccuracy
from orchestrator.report.formats import fmt_ms, format_bytes, interval, op_ms, ratio
from orchestrator.report.model import DeviceRecipes, RecipeGroup, RecipeRow, Report
from orchestrator.report.page.blocks import (
    Block,
    Bullets,
    Charts,
    Figure,
    Grid,
    Paragraph,
    RunView,
    Section,
    Table,
    Text,
    badge,
    code,
    joined,
    muted,
    strong,
    text,
)
from orchestrator.results.accuracy import Accuracy

CHART_KIND = "latency-accuracy"  # render/charts.py draws it per group, by the group's name

RECIPE_HEADERS = ("device", "recipe", "p50 ms", "speed-up", "95% interval", "program", "peak RSS", "SNR dB",
                  "max abs error", "cosine", "top-1 agrees", "verified")
LAYER_ACCURACY_HEADERS = ("layer", "op", "module", "SNR dB", "max abs error", "relative error added")


def quantized_section(view: RunView) -> tuple[Section, ...]:
    """The section (anchor `quantized`, prefixed like the run's other sections), or () when no model of the run
    was lowered with a recipe."""
    groups = view.report.quantized
    if not groups:
        return ()
    note = text(muted("Speed-up: the baseline recipe's p50 over each recipe's, with the 95 % interval of process "
                      "runs resampled. Accuracy: each device's outputs against the fp32 eager model's on the "
                      "reference inputs (worst run). Per layer: a module's kernels summed, whatever XNNPACK calls "
                      "them under each recipe; accuracy per layer from the program's own graph on the reference "
                      "inputs, against the fp32 eager model at the same layer."))
    return (Section(text("Quantized models" + view.label), f"{view.prefix}quantized",
                    (*(_group(g, view.charts) for g in groups), Paragraph(note)), nav="quantized"),)


def _group(group: RecipeGroup, charts: Charts) -> Section:
    blocks: list[Block] = [Paragraph(joined([_answer(group, d) for d in group.devices], " "), tone="answer"),
                           Table(RECIPE_HEADERS, tuple(row for d in group.devices for row in _rows(d)),
                                 (False, False, *([True] * 9), False))]
    if group.calibration:
        blocks.append(Bullets(tuple(text(strong(recipe), f" calibrated on {how}") for recipe, how in group.calibration)))
    chart = charts.of(group.name, CHART_KIND)
    if chart is not None:
        blocks.append(Figure(chart))
    layered = [d for d in group.devices if d.layers]
    if layered:
        blocks.append(Section(text("Per layer: time under each recipe, speed-up against " + (group.baseline or "-")),
                              level=3, blocks=(Grid(tuple(_layer_table(group, d) for d in layered)),)))
    for recipe, found in group.layer_accuracy:
        blocks.append(Section(text(f"Per layer: accuracy of {recipe} against the fp32 eager model"), level=3,
                              blocks=_layer_accuracy(found)))
    return Section(text(f"Model {group.name}: ", joined([text(code(r)) for r in group.recipes], " vs ")),
                   blocks=tuple(blocks), level=3)


def quantized_box(report: Report) -> tuple[Block, ...]:
    """The quantized answer as the report's first box says it (the matrix's, else the summary's); () when no
    recipes were swept."""
    if not report.quantized:
        return ()
    return (Paragraph(joined([quantized_answer(g) for g in report.quantized], " "), tone="answer"),)


def quantized_answer(group: RecipeGroup) -> Text:
    """The group's answer (per device, each recipe against the baseline recipe): the report's first box quotes it."""
    return text("Quantized ", strong(group.name), ": ", joined([_answer(group, d) for d in group.devices], " "))


def _answer(group: RecipeGroup, device: DeviceRecipes) -> Text:
    parts = []
    for row in device.rows:
        if row.recipe == group.baseline or row.p50_ms is None:
            continue
        baseline_bytes = next((r.program_bytes for r in device.rows if r.recipe == group.baseline), None)
        size = f" at {row.program_bytes / baseline_bytes:.0%} of its size" if row.program_bytes and baseline_bytes else ""
        spread = (" ", muted(interval(row.speedup_ci))) if row.speedup_ci is not None else ()
        parts.append(text(code(row.recipe), f" runs {ratio(row.speedup)} as fast as {group.baseline or '-'}", *spread,
                          size, "; ", _accuracy_words(row.accuracy)))
    if not parts:
        return text()
    return text("On ", strong(device.device), ": ", joined(parts, "; "), ".")


def _accuracy_words(accuracy: Accuracy | None) -> Text:
    if accuracy is None or accuracy.max_abs_error is None:
        return text(muted("accuracy not measured" + (f" ({accuracy.detail})" if accuracy and accuracy.detail else "")))
    closeness = "equal to the fp32 eager model's" if accuracy.snr_db is None else f"{accuracy.snr_db:.1f} dB SNR"
    top1 = "" if accuracy.top1_agreement is None else f", top-1 agrees on {accuracy.top1_agreement:.0%} of " \
        f"{accuracy.top1_rows} row{'s' if accuracy.top1_rows != 1 else ''}"
    return text("outputs ", strong(closeness), f" against the fp32 eager model (max abs error "
                f"{accuracy.max_abs_error:.3g}{top1})")


def _rows(device: DeviceRecipes) -> tuple[tuple[Text, ...], ...]:
    return tuple(_row(device.device, row) for row in device.rows)


def _row(device: str, row: RecipeRow) -> tuple[Text, ...]:
    acc = row.accuracy if row.accuracy is not None and row.accuracy.max_abs_error is not None else None
    return (text(device), text(code(row.recipe)), text(fmt_ms(row.p50_ms)), text(ratio(row.speedup)),
            text(interval(row.speedup_ci)), text(format_bytes(row.program_bytes) if row.program_bytes else "-"),
            text(format_bytes(row.peak_rss_kb * 1024) if row.peak_rss_kb else "-"),
            text("-" if acc is None else "exact" if acc.snr_db is None else f"{acc.snr_db:.1f}"),
            text("-" if acc is None else f"{acc.max_abs_error:.3g}"),
            text("-" if acc is None or acc.cosine is None else f"{acc.cosine:.6f}"),
            text("-" if acc is None or acc.top1_agreement is None else f"{acc.top1_agreement:.0%}"),
            text(badge(row.verification, {"pass": "good", "fail": "bad"}.get(row.verification, "info"))))


def _layer_table(group: RecipeGroup, device: DeviceRecipes) -> Table:
    rows = []
    for layer in device.layers:
        below = layer.below_resolution or (False,) * len(layer.p50_ms)
        times = [text(op_ms(t, b)) if t is not None else text("-") for t, b in zip(layer.p50_ms, below, strict=True)]
        speedups = [text(ratio(s)) for r, s in zip(group.recipes, layer.speedup, strict=False) if r != group.baseline]
        rows.append((text(code(layer.layer)), text(muted(layer.ops)), *times, *speedups))
    others = [r for r in group.recipes if r != group.baseline]
    headers = ("layer", "kernels", *(f"{r} p50 ms" for r in group.recipes), *(f"{r} speed-up" for r in others))
    return Table(headers, tuple(rows), (False, False, *([True] * (len(group.recipes) + len(others)))),
                 caption=text(strong(device.device)))


def _layer_accuracy(found: LayerAccuracy) -> tuple[Block, ...]:
    if found.error is not None:
        return (Paragraph(text(muted(f"no per-layer accuracy: {found.error}"))),)
    worst = found.worst
    rows = tuple((text(code(layer.key.layer)), text(layer.key.op + (f" #{layer.key.occurrence + 1}"
                                                                    if layer.key.occurrence else "")),
                  text(muted(layer.module_type.rsplit(".", 1)[-1] or "-")),
                  text("exact" if layer.snr_db is None else f"{layer.snr_db:.1f}"), text(f"{layer.max_abs_error:.3g}"),
                  text(strong(f"{layer.added_error:.3g}")) if layer is worst else text(f"{layer.added_error:.3g}"))
                 for layer in found.layers)
    answer = () if worst is None else (Paragraph(text(
        "The layer that loses most: ", strong(worst.key.label), f" ({worst.module_type.rsplit('.', 1)[-1]}) adds "
        f"{worst.added_error:.3g} of relative error power to the layer before it; its output is "
        + ("exact" if worst.snr_db is None else f"{worst.snr_db:.1f} dB SNR") + " against the fp32 eager model."),
        tone="answer"),)
    return (*answer, Table(LAYER_ACCURACY_HEADERS, rows, (False, False, False, True, True, True)))

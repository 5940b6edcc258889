"""The report's quantized models: a model under several export recipes, per device (docs/how-to/quantized.md).

Filled by report/builders/quantized.py; laid out by report/page/quantized.py; its latency-against-accuracy chart
is drawn by report/render/charts.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.numerics.layer_accuracy import LayerAccuracy
from orchestrator.results.accuracy import Accuracy

if TYPE_CHECKING:  # report.py's Report holds these groups: its Interval is only named here
    from orchestrator.report.model.report import Interval


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
    below_resolution: tuple[bool, ...] = ()  # per recipe: its time is under the kernel timer's resolution


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

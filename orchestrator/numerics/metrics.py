"""Inspector's numerical gap metrics (MSE, L1, SNR), in numpy, and the threshold rule.

Same definitions as ExecuTorch's `MSEComparator`, `L1Comparator` and `SNRComparator`: both sides
are converted to float64 (NaN -> 0 and then infinities -> the largest finite float, but only when
the value holds a NaN, like `convert_to_float_tensor`), then

    MSE = mean((a - b)^2)      L1 = sum(|a - b|)      SNR = 10 log10(mean(a^2) / mean((a - b)^2)) dB

with `a` the reference (AOT output, or the reference device). A pair of sequences is compared
element by element, giving one gap per element, as `_compare_intermediate_outputs` does. The
difference is computed once for the three metrics.

Thresholds: an MSE or L1 gap *above* the threshold diverges; an SNR *below* it does (less signal
over noise is worse).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np

from orchestrator.base.codec import Layout


class Metric(StrEnum):
    MSE = "mse"
    L1 = "l1"
    SNR = "snr"


# Defaults for `--threshold`: the tutorial's "focus on MSE > 1e-4"; an SNR under 40 dB (error
# power 1e-4 of the signal); an L1 over 1e-2 summed over a tensor.
DEFAULT_THRESHOLDS = {Metric.MSE: 1e-4, Metric.L1: 1e-2, Metric.SNR: 40.0}


@dataclass(frozen=True)
class Gap:
    """The three metrics for one output (one element of Inspector's `gap` list)."""

    mse: float
    l1: float
    snr: float  # infinite for identical outputs

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)

    def value(self, metric: Metric) -> float:
        return getattr(self, metric.value)


def to_float64(value: Any) -> np.ndarray:
    """`convert_to_float_tensor`: float64 array; NaNs replaced (with infinities) only when present."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        raise TypeError("a sequence cannot be converted to one tensor")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Cannot convert value of type {type(value)} to a tensor: {exc}") from None
    if np.isnan(array).any():
        array = np.nan_to_num(array)
    return array


def element_gap(a: Any, b: Any) -> Gap:
    """MSE, L1 and SNR of one pair of values (`a` is the reference)."""
    ta, tb = to_float64(a), to_float64(b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        diff = ta - tb  # raises ValueError for shapes that do not broadcast, as torch does
        squared = np.square(diff)
        mse = float(np.mean(squared))
        l1 = float(np.sum(np.abs(diff)))
        signal = float(np.mean(np.square(ta)))
        snr = float(10 * np.log10(np.float64(signal) / np.float64(mse)))
    return Gap(mse, l1, snr)


def compare(a: Any, b: Any) -> tuple[Gap, ...]:
    """`_compare_intermediate_outputs`: one Gap per element of a pair of sequences, else one."""
    a_seq = isinstance(a, Sequence)
    b_seq = isinstance(b, Sequence)
    if a_seq and b_seq:
        if len(a) != len(b):
            raise ValueError(f"sequences of different lengths ({len(a)} and {len(b)}) cannot be compared")
        return tuple(element_gap(x, y) for x, y in zip(a, b, strict=False))
    if not a_seq and not b_seq:
        return (element_gap(a, b),)
    raise ValueError("a sequence and a single value cannot be compared")


def worst(gaps: Sequence[Gap], metric: Metric) -> float:
    """The worst element of a gap list under `metric` (NaN when there is none)."""
    values = [g.value(metric) for g in gaps if not math.isnan(g.value(metric))]
    if not values:
        return math.nan
    return min(values) if metric is Metric.SNR else max(values)


def crosses(value: float, metric: Metric, threshold: float) -> bool:
    """Whether a gap value diverges under `metric` and `threshold`."""
    if math.isnan(value):
        return False
    return value < threshold if metric is Metric.SNR else value > threshold

"""Our numpy port against ExecuTorch's own comparators and mapping functions, on random inputs."""

from __future__ import annotations

import functools
import math
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.numerics.mapping import (
    find_op_names,
    map_runtime_aot_intermediate_outputs,
    merge_runtime_overlapping_debug_handles,
    unwrap,
)
from orchestrator.numerics.metrics import (
    Gap,
    Metric,
    compare,
    crosses,
    element_gap,
    worst,
)


@functools.cache
def _upstream() -> tuple[ModuleType, ModuleType, ModuleType]:
    """ExecuTorch's Inspector utilities, its comparators and torch: project dependencies, never skipped, imported by
    the first test that compares against them rather than at collection, where every pytest-xdist worker would pay
    3.5 CPU-s for them and only one runs these tests."""
    import executorch.devtools.inspector._inspector_utils as utils
    import executorch.devtools.inspector.numerical_comparator as comparators
    import torch

    return utils, comparators, torch


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


arrays = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=n, max_size=n),
        st.lists(st.floats(-1e3, 1e3, allow_nan=False, width=32), min_size=n, max_size=n),
    )
)


@settings(max_examples=60, deadline=None)
@given(arrays)
def test_metrics_equal_inspector_comparators(pair: tuple[list[float], list[float]]) -> None:
    a = np.array(pair[0], dtype=np.float32)
    b = np.array(pair[1], dtype=np.float32)
    _, comparators, torch = _upstream()
    gap = element_gap(a, b)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    assert _close(gap.mse, comparators.MSEComparator().element_compare(ta, tb))
    assert _close(gap.l1, comparators.L1Comparator().element_compare(ta, tb))
    assert _close(gap.snr, comparators.SNRComparator().element_compare(ta, tb))


def test_nan_is_zeroed_like_inspector_and_infinity_only_then() -> None:
    a = np.array([np.nan, 1.0, 2.0])
    b = np.array([0.0, 1.0, 2.0])
    assert element_gap(a, b).mse == 0.0  # NaN -> 0 before comparing
    _, comparators, torch = _upstream()
    ta, tb = torch.tensor(a), torch.tensor(b)
    assert comparators.MSEComparator().element_compare(ta, tb) == 0.0
    inf = element_gap(np.array([np.inf, 1.0]), np.array([0.0, 1.0]))
    assert math.isinf(inf.mse)  # no NaN present: infinities stay, as in Inspector
    assert math.isinf(element_gap(np.ones(3), np.ones(3)).snr)  # identical: infinite SNR


def test_sequences_compare_element_by_element_and_mismatches_raise() -> None:
    gaps = compare([np.ones(2), np.zeros(2)], [np.ones(2), np.ones(2)])
    assert [g.mse for g in gaps] == [0.0, 1.0]
    with pytest.raises(ValueError):
        compare([np.ones(2)], np.ones(2))
    with pytest.raises(ValueError):
        compare([np.ones(2)], [np.ones(2), np.ones(2)])


def test_threshold_direction_per_metric() -> None:
    assert crosses(2e-4, Metric.MSE, 1e-4) and not crosses(1e-5, Metric.MSE, 1e-4)
    assert crosses(30.0, Metric.SNR, 40.0) and not crosses(50.0, Metric.SNR, 40.0)
    assert not crosses(math.nan, Metric.MSE, 0.0)
    gaps = (Gap(1.0, 2.0, 50.0), Gap(3.0, 1.0, 20.0))
    assert worst(gaps, Metric.MSE) == 3.0 and worst(gaps, Metric.L1) == 2.0 and worst(gaps, Metric.SNR) == 20.0


handles = st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=4, unique=True).map(tuple), min_size=1, max_size=8,
                   unique=True)


@settings(max_examples=150, deadline=None)
@given(handles, st.lists(st.integers(0, 20), min_size=8, max_size=8))
def test_merge_overlapping_handles_equals_inspector(keys: list[tuple[int, ...]], instructions: list[int]) -> None:
    entries = {k: (instructions[i], f"data{i}", 1) for i, k in enumerate(keys)}
    utils, _, _ = _upstream()
    assert merge_runtime_overlapping_debug_handles(entries) == utils.merge_runtime_overlapping_debug_handles(dict(entries))


@settings(max_examples=150, deadline=None)
@given(handles, handles, st.integers(1, 2))
def test_mapping_equals_inspector(aot_keys: list[tuple[int, ...]], runtime_keys: list[tuple[int, ...]], outputs: int) -> None:
    # AOT handles are single ints (one per node), runtime ones merged so they do not overlap: Inspector's preconditions.
    aot_handles = sorted({(k[0],) for k in aot_keys})
    utils, _, torch = _upstream()
    runtime = utils.merge_runtime_overlapping_debug_handles({k: (i, None, outputs) for i, k in enumerate(runtime_keys)})
    rng = np.random.default_rng(len(aot_handles) * 31 + len(runtime))
    aot_np = {h: rng.standard_normal(3).astype(np.float32) for h in aot_handles}
    runtime_np = {k: ([rng.standard_normal(3).astype(np.float32) for _ in range(outputs)], outputs) for k in runtime}
    aot_t = {h: torch.from_numpy(v) for h, v in aot_np.items()}
    runtime_t = {k: ([torch.from_numpy(x) for x in v[0]], v[1]) for k, v in runtime_np.items()}

    try:
        theirs = utils.map_runtime_aot_intermediate_outputs(aot_t, runtime_t)
    except (ValueError, IndexError) as exc:  # Inspector's own failures (e.g. more outputs than handles): ours too
        with pytest.raises(type(exc)):
            map_runtime_aot_intermediate_outputs(aot_np, runtime_np)
        return
    ours = map_runtime_aot_intermediate_outputs(aot_np, runtime_np)
    assert len(ours) == len(theirs)
    for ((oh, ov), (orh, orv)), ((th, tv), (trh, trv)) in zip(ours.items(), theirs.items(), strict=False):
        assert oh == th and orh == trh
        assert np.array_equal(unwrap(ov), tv.numpy()) and np.array_equal(orv, trv.numpy())


def test_find_op_names_takes_handles_inside_the_target() -> None:
    names = {(1,): ["conv"], (2,): ["relu"], (3,): ["linear"], (2, 3): ["fused"]}
    utils, _, _ = _upstream()
    assert find_op_names((1, 2), names) == ["conv", "relu"]
    assert find_op_names((2, 3), names) == utils.find_op_names((2, 3), names)

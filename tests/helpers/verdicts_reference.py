"""The verdict statistics as they were before the vectorised bootstrap (etfarm 68e915a), kept verbatim.

The reference that tests/unit/verdicts/test_bootstrap_equivalence.py and benchmarks/bench_compare.py
hold the new implementation to: `estimate` is orchestrator/verdicts/statistics.py's, with its
replicate-by-replicate hierarchical bootstrap (resample runs, then iterations with np.median).
Seeded like the originals. Not used
by etfarm itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.verdicts.statistics import Center, Estimate, RunSamples, usable_runs

_CHUNK = 250


def estimate(a: RunSamples, b: RunSamples, *, confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
             center: str = Center.MEAN) -> Estimate | None:
    import numpy as np

    a_runs, b_runs = usable_runs(a), usable_runs(b)
    if not a_runs or not b_runs:
        return None
    center = Center(center)
    med_a = run_median(a_runs, center)
    med_b = run_median(b_runs, center)
    if med_a <= 0:
        return None
    rng = np.random.default_rng(seed)
    boot_a = _bootstrap_medians(a_runs, resamples, rng, center)
    boot_b = _bootstrap_medians(b_runs, resamples, rng, center)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_b / boot_a
    ratios = ratios[np.isfinite(ratios)]
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = (np.percentile(ratios, [tail, 100.0 - tail]) if ratios.size else (float("nan"), float("nan")))
    return Estimate(ratio=med_b / med_a, ci_low=float(low), ci_high=float(high), p_value=rank_p_value(a_runs, b_runs, center),
                    runs_a=len(a_runs), runs_b=len(b_runs), median_a_ms=med_a, median_b_ms=med_b)


def run_median(runs: RunSamples, center: str = Center.MEAN) -> float:
    import numpy as np

    medians = [np.median(r) for r in runs if len(r)]
    return float(np.min(medians) if center == Center.FAST else np.mean(medians))


def _bootstrap_medians(runs: list[list[float]], resamples: int, rng: Any, center: str = Center.MEAN) -> Any:
    import numpy as np

    lengths = np.array([len(r) for r in runs])
    width = int(lengths.max())
    data = np.zeros((len(runs), width))
    for i, r in enumerate(runs):
        data[i, : len(r)] = r
    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        n = min(_CHUNK, resamples - start)
        picked = rng.integers(0, len(runs), size=(n, len(runs)))
        within = (rng.random((n, len(runs), width)) * lengths[picked][..., None]).astype(np.int64)
        values = data[picked[..., None], within]
        medians = np.median(values, axis=2)
        out[start : start + n] = medians.min(axis=1) if center == Center.FAST else medians.mean(axis=1)
    return out


def rank_p_value(a: RunSamples, b: RunSamples, center: str = Center.MEAN) -> float:
    import numpy as np
    from scipy.stats import mannwhitneyu

    med_a = sorted(float(np.median(r)) for r in a if len(r))
    med_b = sorted(float(np.median(r)) for r in b if len(r))
    if center == Center.FAST:
        med_a, med_b = med_a[: (len(med_a) + 1) // 2], med_b[: (len(med_b) + 1) // 2]
    if len(med_a) < 2 or len(med_b) < 2:
        return 1.0
    if len(set(med_a) | set(med_b)) == 1:
        return 1.0
    return float(mannwhitneyu(med_b, med_a, alternative="two-sided").pvalue)


_FRAMEWORK = ("Method::execute", "Method::init", "Program::load_method")


def per_op_runs(etdumps: Sequence[Any]) -> dict[tuple[str, str, int], tuple[int, list[Any]]]:
    """verdicts/compare.py's per-op samples as they were read: pandas frames, grouped by event."""
    from orchestrator.profiles.analysis import load_samples

    samples = load_samples(list(etdumps), run_labels=[f"{i}" for i in range(len(etdumps))])
    samples = samples[~samples["event_name"].isin(list(_FRAMEWORK))]
    out: dict[tuple[str, str, int], tuple[int, list[Any]]] = {}
    seen: dict[tuple[str, str], int] = {}
    for (block, index, name), frame in samples.groupby(["event_block", "event_index", "event_name"], sort=True,
                                                        observed=True):
        occurrence = seen[(str(block), str(name))] = seen.get((str(block), str(name)), -1) + 1
        out[(str(block), str(name), occurrence)] = (
            int(index), [g.to_numpy() for _, g in frame.groupby("run", sort=False, observed=True)["duration_ms"]])
    return out


def op_verdicts(a_ops: dict[Any, Any], b_ops: dict[Any, Any], threshold: float = 0.10, center: str = Center.MEAN,
                seed: int = 0) -> list[tuple[Any, str, Estimate]]:
    """verdicts/compare.py's per-op verdicts as they were computed: one estimate per op, scipy's BH."""
    from scipy.stats import false_discovery_control

    from orchestrator.verdicts.statistics import decide

    estimates = []
    for key in [k for k in b_ops if k in a_ops]:
        est = estimate(a_ops[key][1], b_ops[key][1], seed=seed, center=center)
        if est is not None and est.median_b_ms > 0:
            estimates.append((key, est))
    adjusted = [float(p) for p in false_discovery_control([e.p_value for _, e in estimates], method="bh")] \
        if len(estimates) > 1 else [e.p_value for _, e in estimates]
    return [(key, decide(est, p, threshold).value, est) for (key, est), p in zip(estimates, adjusted, strict=True)]

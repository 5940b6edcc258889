"""A report's CI points in the formats CI dashboards take. Format only: every figure comes from report/model/ci.py.

- `bmf`: Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format): an object of benchmarks,
  each an object of measures `{value, lower_value, upper_value}`. Latency uses Bencher's built-in `latency`
  measure, whose unit is nanoseconds; the others are named with their unit (`load-time-ms`, `peak-rss-kib`,
  `energy-uj-per-inference` with its interval, `memory-delegate-bytes` and the other owners).
- `github-benchmark`: github-action-benchmark's `customSmallerIsBetter` input: a list of
  `{name, unit, value, range, extra}`; a decode rate (bigger is better) is written as milliseconds per token.
- `hud`: the PyTorch OSS benchmark database's v3 records, as ExecuTorch's benchmark jobs upload them for the
  HUD dashboards: `{benchmark, model, metric, runners}`, one record per measure, metric names as theirs.
An emulated device is marked in every format: its benchmark names say `(emulated)`, its records `emulated: true`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from orchestrator.report.model.ci import OWNER_MEASURES, CiPoint, Measure

NS_PER_MS = 1e6
# Bencher: measure slug and the factor from the point's unit. `latency` is Bencher's own (ns).
_BMF: Mapping[Measure, tuple[str, float]] = {
    Measure.LATENCY_MS: ("latency", NS_PER_MS),
    Measure.MEAN_LATENCY_MS: ("mean-latency", NS_PER_MS),
    Measure.LOAD_MS: ("load-time-ms", 1.0),
    Measure.PEAK_RSS_KB: ("peak-rss-kib", 1.0),
    Measure.PSS_KB: ("pss-kib", 1.0),
    Measure.PLANNED_BYTES: ("planned-memory-bytes", 1.0),
    Measure.TTFT_MS: ("ttft-ms", 1.0),
    Measure.DECODE_TOKENS_PER_S: ("decode-tokens-per-s", 1.0),
    Measure.ENERGY_UJ: ("energy-uj-per-inference", 1.0),
    Measure.POWER_MW: ("power-mw", 1.0),
    **{m: (f"memory-{owner}-bytes", 1.0) for owner, m in OWNER_MEASURES.items()},
}
# github-action-benchmark: the entry's label and unit; every entry smaller-is-better.
_GAB: Mapping[Measure, tuple[str, str]] = {
    Measure.LATENCY_MS: ("p50 latency", "ms"),
    Measure.MEAN_LATENCY_MS: ("mean latency", "ms"),
    Measure.LOAD_MS: ("load time", "ms"),
    Measure.PEAK_RSS_KB: ("peak RSS", "KiB"),
    Measure.PSS_KB: ("PSS", "KiB"),
    Measure.PLANNED_BYTES: ("planned memory", "bytes"),
    Measure.TTFT_MS: ("time to first token", "ms"),
    Measure.DECODE_TOKENS_PER_S: ("decode time per token", "ms"),
    Measure.ENERGY_UJ: ("energy per inference", "uJ"),
    Measure.POWER_MW: ("power above idle", "mW"),
    **{m: (f"memory by owner: {owner}", "bytes") for owner, m in OWNER_MEASURES.items()},
}
# ExecuTorch's metric names in the benchmark database, and the factor from the point's unit.
_HUD: Mapping[Measure, tuple[str, float]] = {
    Measure.LATENCY_MS: ("median_inference_latency(ms)", 1.0),
    Measure.MEAN_LATENCY_MS: ("avg_inference_latency(ms)", 1.0),
    Measure.LOAD_MS: ("model_load_time(ms)", 1.0),
    Measure.PEAK_RSS_KB: ("peak_inference_mem_usage(mb)", 1.0 / 1024.0),
    Measure.PSS_KB: ("pss_mem_usage(mb)", 1.0 / 1024.0),
    Measure.PLANNED_BYTES: ("planned_mem(mb)", 1.0 / (1024.0 * 1024.0)),
    Measure.TTFT_MS: ("ttft(ms)", 1.0),
    Measure.DECODE_TOKENS_PER_S: ("token_per_sec", 1.0),
    Measure.ENERGY_UJ: ("energy_per_inference(uj)", 1.0),
    Measure.POWER_MW: ("avg_power(mw)", 1.0),
    **{m: (f"{owner}_mem_usage(mb)", 1.0 / (1024.0 * 1024.0)) for owner, m in OWNER_MEASURES.items()},
}
HUD_BENCHMARK = "ExecuTorch"
HUD_APP_TYPE = "ETFARM"


def render_bmf(points: Sequence[CiPoint]) -> str:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for p in points:
        slug, factor = _BMF[p.measure]
        metric = {"value": p.value * factor}
        if p.low is not None and p.high is not None:
            metric |= {"lower_value": p.low * factor, "upper_value": p.high * factor}
        out.setdefault(p.benchmark, {})[slug] = metric
    return _json(out)


def render_github_benchmark(points: Sequence[CiPoint]) -> str:
    return _json([_gab_entry(p) for p in points])


def _gab_entry(p: CiPoint) -> dict[str, Any]:
    label, unit = _GAB[p.measure]
    value = 1000.0 / p.value if p.measure is Measure.DECODE_TOKENS_PER_S else p.value
    entry: dict[str, Any] = {"name": f"{p.benchmark} {label}", "unit": unit, "value": value}
    if p.low is not None and p.high is not None:
        entry["range"] = f"{p.low:.6g} to {p.high:.6g}"
    extra = [f"device: {p.device} ({p.target})", f"configuration: {p.configuration}"]
    if p.runs:
        extra.append(f"process runs: {p.runs}")
    if p.measure is Measure.DECODE_TOKENS_PER_S:
        extra.append(f"decode rate: {p.value:.6g} tokens/s")
    if p.emulated:
        extra.append("emulated: qemu on a host, not the hardware's timing")
    entry["extra"] = "\n".join(extra)
    return entry


def render_hud(points: Sequence[CiPoint], run_id: str) -> str:
    return _json([_hud_record(p, run_id) for p in points])


def _hud_record(p: CiPoint, run_id: str) -> dict[str, Any]:
    name, factor = _HUD[p.measure]
    metric_extra: dict[str, Any] = {"method": "forward"}
    if p.low is not None and p.high is not None:
        metric_extra |= {"lower_value": p.low * factor, "upper_value": p.high * factor}
    return {
        "benchmark": {"name": HUD_BENCHMARK, "mode": "inference",
                      "extra_info": {"app_type": HUD_APP_TYPE, "run_id": run_id, "emulated": p.emulated}},
        "model": {"name": p.model, "type": "OSS model", "backend": p.configuration},
        "metric": {"name": name, "benchmark_values": [p.value * factor], "target_value": 0,
                   "extra_info": metric_extra},
        "runners": [{"name": p.device, "type": _os(p.target), "avail_mem_in_gb": "", "total_mem_in_gb": "",
                     "extra_info": {"target": p.target, "emulated": p.emulated}}],
    }


def _os(target: str) -> str:
    return "Android" if target.startswith("android") else "Linux"


def _json(data: object) -> str:
    return json.dumps(data, indent=1, allow_nan=False) + "\n"


# keyed by the format's name (destination.ReportFormat's values: a StrEnum member finds its entry)
RENDERERS: Mapping[str, Callable[[Sequence[CiPoint], str], str]] = {
    "bmf": lambda points, run_id: render_bmf(points),
    "github-benchmark": lambda points, run_id: render_github_benchmark(points),
    "hud": render_hud,
}

"""`report --format bmf | github-benchmark | hud`: checked against each format's published schema and examples."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from orchestrator.report.builders.ci import ci_points
from orchestrator.report.builders.report import build_report
from orchestrator.report.model import MemoryRow, Report
from orchestrator.report.model.ci import Measure
from orchestrator.report.render.ci import render_bmf, render_github_benchmark, render_hud
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import ModelMemory, Owners
from orchestrator.results.record import RunRecord
from tests.helpers.synthetic_run import make_run_dir

# Bencher's published JSON Schema of the Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format).
BMF_SCHEMA = {
    "$id": "https://bencher.dev/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {"type": "object", "patternProperties": {".+": {
        "type": "object",
        "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"}, "upper_value": {"type": "number"}},
        "required": ["value"],
    }}}},
}
# Its published example.
BMF_EXAMPLE = {
    "benchmark_name": {"latency": {"value": 88.0, "lower_value": 87.42, "upper_value": 88.88},
                       "throughput": {"value": 5.55, "lower_value": 3.14, "upper_value": 6.30}},
    "/bin/sh -c ./my_build_script.sh": {"build-time": {"value": 87.0}},
    "my_binary": {"file-size": {"value": 42.0}},
}
# github-action-benchmark's README example for `tool: customSmallerIsBetter`, and the action's BenchmarkResult
# (src/extract.ts: name, value, unit required; range and extra optional strings).
GAB_EXAMPLE = [
    {"name": "My Custom Smaller Is Better Benchmark - CPU Load", "unit": "Percent", "value": 50},
    {"name": "My Custom Smaller Is Better Benchmark - Memory Used", "unit": "Megabytes", "value": 100, "range": "3",
     "extra": "Value for Tooltip: 25\nOptional Num #2: 100\nAnything Else!"},
]
GAB_SCHEMA = {
    "type": "array",
    "items": {"type": "object", "required": ["name", "value", "unit"], "additionalProperties": False,
              "properties": {"name": {"type": "string"}, "value": {"type": "number"}, "unit": {"type": "string"},
                             "range": {"type": "string"}, "extra": {"type": "string"}}},
}
# The PyTorch OSS benchmark database's v3 record as ExecuTorch's extract_benchmark_results.py writes it.
HUD_SCHEMA = {
    "type": "array",
    "items": {"type": "object", "required": ["benchmark", "model", "metric", "runners"], "properties": {
        "benchmark": {"type": "object", "required": ["name", "mode", "extra_info"],
                      "properties": {"name": {"type": "string"}, "mode": {"type": "string"},
                                     "extra_info": {"type": "object"}}},
        "model": {"type": "object", "required": ["name", "type", "backend"],
                  "properties": {"name": {"type": "string"}, "type": {"type": "string"}, "backend": {"type": "string"}}},
        "metric": {"type": "object", "required": ["name", "benchmark_values", "target_value"],
                   "properties": {"name": {"type": "string"},
                                  "benchmark_values": {"type": "array", "items": {"type": "number"}, "minItems": 1},
                                  "target_value": {"type": "number"}, "extra_info": {"type": "object"}}},
        "runners": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["name", "type"]}},
    }},
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    run = make_run_dir(tmp_path_factory.mktemp("run"), devices=("pixel8", "rpi5", "dead"), models=("cnn", "mlp"),
                       speed=(1.0, 2.0, 1.0), failed=("dead",), emulated=("rpi5",))
    return build_report(RunRecord(run))


def test_the_schemas_take_the_published_examples() -> None:
    jsonschema.validate(BMF_EXAMPLE, BMF_SCHEMA)
    jsonschema.validate(GAB_EXAMPLE, GAB_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # and are not empty checks
        jsonschema.validate({"b": {"latency": {"lower_value": 1.0}}}, BMF_SCHEMA)


def test_bmf_one_benchmark_per_device_and_model_latency_in_ns_with_its_interval(report: Report) -> None:
    data = json.loads(render_bmf(ci_points(report)))
    jsonschema.validate(data, BMF_SCHEMA)
    assert set(data) == {"cnn [xnnpack] on pixel8", "mlp [xnnpack] on pixel8", "cnn [xnnpack] on rpi5 (emulated)",
                         "mlp [xnnpack] on rpi5 (emulated)"}  # the failed device has nothing to say: no zeros
    for model in report.models:
        for d in model.latency:
            if d.p50_ms is None:
                continue
            name = f"{model.name} [xnnpack] on {d.device}" + (" (emulated)" if d.device == "rpi5" else "")
            latency = data[name]["latency"]
            assert math.isclose(latency["value"], d.p50_ms * 1e6)
            assert d.p50_ci is not None and latency["lower_value"] <= latency["value"] <= latency["upper_value"]
            assert math.isclose(latency["lower_value"], d.p50_ci.low * 1e6)
            assert math.isclose(data[name]["load-time-ms"]["value"], d.load_p50_ms or math.nan)


def test_github_benchmark_entries_are_smaller_is_better_and_say_emulated(report: Report) -> None:
    entries = json.loads(render_github_benchmark(ci_points(report)))
    jsonschema.validate(entries, GAB_SCHEMA)
    names = [e["name"] for e in entries]
    assert len(names) == len(set(names))  # the action keys its series by name
    p50 = {e["name"]: e for e in entries if e["name"].endswith(" p50 latency")}
    assert set(p50) == {f"{m} [xnnpack] on {d} p50 latency" for m in ("cnn", "mlp")
                        for d in ("pixel8", "rpi5 (emulated)")}
    rpi5 = p50["cnn [xnnpack] on rpi5 (emulated) p50 latency"]
    assert rpi5["unit"] == "ms" and "emulated" in rpi5["extra"] and rpi5["range"].count(" to ") == 1
    latency = next(d for d in report.models[0].latency if d.device == "rpi5")
    assert math.isclose(rpi5["value"], latency.p50_ms or math.nan)


def test_hud_records_are_v3_and_mark_the_emulated_runner(report: Report) -> None:
    records = json.loads(render_hud(ci_points(report), report.run_id))
    jsonschema.validate(records, HUD_SCHEMA)
    latency = [r for r in records if r["metric"]["name"] == "median_inference_latency(ms)"]
    assert len(latency) == 4 and {r["benchmark"]["name"] for r in records} == {"ExecuTorch"}
    emulated = {r["runners"][0]["name"] for r in records if r["runners"][0]["extra_info"]["emulated"]}
    assert emulated == {"rpi5"}
    with_memory = replace(report, memory=(MemoryRow("cnn", "rpi5", 3072, None, 2048, None, None),))
    rss = [r for r in json.loads(render_hud(ci_points(with_memory), report.run_id))
           if r["metric"]["name"] == "peak_inference_mem_usage(mb)"]
    assert [(r["runners"][0]["name"], r["metric"]["benchmark_values"]) for r in rss] == [("rpi5", [3.0])]  # KiB -> MB
    assert Measure.PSS_KB in {p.measure for p in ci_points(with_memory)}  # an absent figure is no point, never 0


def test_the_cli_writes_each_format_to_stdout_or_a_directory(report: Report, tmp_path: Path) -> None:
    from orchestrator.cli import main

    run = make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5"), models=("cnn",), emulated=("rpi5",))
    assert main(["report", str(run), "--format", "bmf", "--output", f"{tmp_path / 'out'}/"]) == 0
    jsonschema.validate(json.loads((tmp_path / "out" / "report.bmf.json").read_text()), BMF_SCHEMA)
    assert main(["report", str(run), "--format", "github-benchmark", "--output", str(tmp_path / "gab.json")]) == 0
    jsonschema.validate(json.loads((tmp_path / "gab.json").read_text()), GAB_SCHEMA)


def test_energy_with_its_interval_and_memory_by_owner_in_every_format(report: Report) -> None:
    owners = ModelMemory(Owners(program=4096, planned=1 << 20, delegate=3 << 20, runtime=512, other=0), 6 << 20)
    energy = ModelEnergy(True, sensor="odpm", uj_per_inference=812.5, uj_per_inference_low=790.0,
                         uj_per_inference_high=835.0, mw=410.0)
    rows = (MemoryRow("cnn", "pixel8", 3072, None, 2048, 1 << 20, None, by_owner=owners, energy=energy),
            MemoryRow("mlp", "pixel8", 3072, None, 2048, None, None, energy=ModelEnergy.unavailable("no sensor")))
    points = ci_points(replace(report, memory=rows))
    bmf = json.loads(render_bmf(points))
    jsonschema.validate(bmf, BMF_SCHEMA)
    cnn = bmf["cnn [xnnpack] on pixel8"]
    assert cnn["energy-uj-per-inference"] == {"value": 812.5, "lower_value": 790.0, "upper_value": 835.0}
    assert cnn["power-mw"] == {"value": 410.0}
    assert {k: v["value"] for k, v in cnn.items() if k.startswith("memory-")} == {
        "memory-program-bytes": 4096, "memory-planned-bytes": 1 << 20, "memory-delegate-bytes": 3 << 20,
        "memory-runtime-bytes": 512, "memory-other-bytes": 0}
    assert cnn["planned-memory-bytes"] == {"value": 1 << 20}  # the plan's figure stays its own measure
    # No sensor, no by-owner figures: no such measures at all, never zeros.
    assert not {k for k in bmf["mlp [xnnpack] on pixel8"] if k.startswith(("memory-", "energy", "power"))}

    gab = json.loads(render_github_benchmark(points))
    jsonschema.validate(gab, GAB_SCHEMA)
    assert len({e["name"] for e in gab}) == len(gab)
    uj = next(e for e in gab if e["name"] == "cnn [xnnpack] on pixel8 energy per inference")
    assert uj["unit"] == "uJ" and uj["value"] == 812.5 and uj["range"] == "790 to 835"
    delegate = next(e for e in gab if e["name"] == "cnn [xnnpack] on pixel8 memory by owner: delegate")
    assert delegate["value"] == 3 << 20 and delegate["unit"] == "bytes"

    hud = json.loads(render_hud(points, report.run_id))
    jsonschema.validate(hud, HUD_SCHEMA)
    metrics = {r["metric"]["name"]: r["metric"] for r in hud
               if r["model"]["name"] == "cnn" and r["runners"][0]["name"] == "pixel8"}
    assert metrics["delegate_mem_usage(mb)"]["benchmark_values"] == [3.0]  # bytes -> MiB
    assert metrics["planned_mem(mb)"]["benchmark_values"] == [1.0] == metrics["planned_mem_usage(mb)"]["benchmark_values"]
    assert metrics["energy_per_inference(uj)"]["extra_info"]["lower_value"] == 790.0

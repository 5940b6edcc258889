"""Records of every kind the codec writes beside the results model (verdicts, night records, bisect steps), built
the same way each time, and the JSON etfarm wrote for them before these classes went through the codec
(tests/unit/results/fixtures/records_before_codec.json, written by `python -m tests.helpers.codec_samples`
at 5689d1e, the last commit whose hand-written `to_dict`s produced it)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[1] / "unit" / "results" / "fixtures" / "records_before_codec.json"


def samples() -> dict[str, list[Any]]:
    """Per class name, instances covering its None, NaN and computed fields."""
    import numpy as np

    from orchestrator.app.bisect_search import Outcome, Step
    from orchestrator.verdicts.accuracy import AccuracyVerdict
    from orchestrator.verdicts.below import BelowThreshold
    from orchestrator.verdicts.changes import ChangePoint, SeriesChanges
    from orchestrator.verdicts.compare import Comparison, compare_sides
    from orchestrator.verdicts.confirmation import Confirmation
    from orchestrator.verdicts.estimates import Estimate
    from orchestrator.verdicts.figures import SideFigures
    from orchestrator.verdicts.likeness import IncompleteSide, SeriesKey
    from orchestrator.verdicts.memory import MemoryVerdict
    from orchestrator.verdicts.noise import NoiseFloor
    from orchestrator.verdicts.series import Step as SeriesStep
    from orchestrator.verdicts.series_clean import LeftOutNight
    from orchestrator.verdicts.sides import Side, SideRun
    from orchestrator.verdicts.statistics import VerdictSettings
    from orchestrator.verdicts.trust import Load

    estimate = Estimate(1.25, 1.1, 1.4, 0.004, 6, 5, 2.0, 2.5)
    fast = Estimate(0.9, 0.8, math.nan, math.nan, 3, 3, 1.0, 0.9, "6 fast", "4 at 1.40x", "spans two readings")
    settings = VerdictSettings(resamples=300, center="mean")  # the default when the fixtures were written

    def side(level: float, seed: int, source: str) -> Side:
        rng = np.random.default_rng(seed)
        return Side(source, "pixel8", "mlp", tuple(SideRun(f"run-{k}", tuple(level * (1 + 0.01 * rng.standard_normal(10))),
                                                           None) for k in range(6)))

    slower = compare_sides(side(1.0, 1, "run-a"), side(1.5, 2, "run-b"), settings)
    same = compare_sides(side(1.0, 3, "run-a"), side(1.0, 4, "run-b"), settings,
                         noise=NoiseFloor(0.03, jobs=8, method="replicates", groups=2))
    return {
        "Estimate": [estimate, fast],
        "Load": [Load(3, 40), Load(0, 0)],
        "SideFigures": [SideFigures(2.0, 2.1, 60)],
        "AccuracyVerdict": [AccuracyVerdict(None, 31.5, 1.0, 0.98, True, "SNR fell 9 dB")],
        "Confirmation": [Confirmation("pixel8", "mlp", "run-1", "run-2", True, "regressed", "interleaved"),
                         Confirmation("pixel8", "mlp", "run-1", "run-2", False, "unchanged")],
        "BelowThreshold": [BelowThreshold("slower", 1.03, 1.01, 1.05, 0.05)],
        "MemoryVerdict": [MemoryVerdict(1000, 1500, 0.1, True, "delegate +500 B")],
        "LeftOutNight": [LeftOutNight("run-7", 10, 60)],
        "ChangePoint": [ChangePoint("pixel8", "mlp", "run-3", "2026-01-03T00:00:00+0000", None, 2.0, 2.6, 3)],
        "SeriesChanges": [SeriesChanges("pixel8", "mlp", 9, 0.02, 4.5,
                                        (ChangePoint("pixel8", "mlp", "run-3", "2026-01-03", "abc", 2.0, 2.6, 3),),
                                        ("run-5",), (("backend", "xnnpack"), ("threads", "4")))],
        "SeriesStep": [SeriesStep("run-3", "2026-01-03", "abc", 1.3), SeriesStep("run-4", "2026-01-04", None, 0.8)],
        "IncompleteSide": [IncompleteSide("A", "run-1", "interrupted")],
        "SeriesKey": [SeriesKey("pixel8", "mlp", (("backend", "xnnpack"), ("threads", "4")))],
        "NoiseFloor": [NoiseFloor(0.03, jobs=8), NoiseFloor(None, jobs=2), NoiseFloor(0.05, auto=False),
                       NoiseFloor(0.04, jobs=9, method="replicates", groups=3)],
        "VerdictSettings": [settings, VerdictSettings(center="mean", auto_noise_floor=True, job_shift=0.02)],
        "BisectStep": [Step("abc", "speed up", Outcome.SLOWER, "regressed", 1.3, 1.2, 1.4, True, "", "p.pte",
                            "page.html", ("run-1",), True),
                       Step("def", "docs", Outcome.SKIPPED, "skipped", reason="export failed")],
        "Comparison": [Comparison("run-a", "run-b", settings, (slower, same))],
        **_more(),
    }


def _more() -> dict[str, list[Any]]:
    """Added after 219bdb2 (their `to_dict`s' JSON was written at 8305c92, the last commit that had them)."""
    from orchestrator.app.bisect_night import NightBisect
    from orchestrator.farm.status import WorkerRow
    from orchestrator.results.contention import ContentionSummary
    from orchestrator.run.configuration import SettingDifference

    return {
        "SettingDifference": [SettingDifference("backend", "xnnpack", "portable")],
        "WorkerRow": [WorkerRow("tcp://h:1", "w1", {"pixel8": True, "rpi5": False}, ("task-1",))],
        "ContentionSummary": [ContentionSummary(60, 6, 0.2, 1.5, 0.9, 12, 3), ContentionSummary()],
        "OpVerdict": _op_verdicts(),
        **_verdicts(),
        **_numerics(),
        **_the_rest(),
        "NightBisect": [NightBisect("pixel8", "mlp", "run-1", "a" * 40, "b" * 40, "c" * 40, "deeper", 1.2, measured=2),
                        NightBisect("pixel8", "mlp", "run-1", None, None, None, reason="one commit", budget_ran_out=True)],
    }


def _op_verdicts() -> list[Any]:
    """Added after 8305c92 (their `to_dict`'s JSON was written at 4fdb1c2)."""
    from orchestrator.verdicts.estimates import Estimate
    from orchestrator.verdicts.pair_verdicts import OpVerdict
    from orchestrator.verdicts.statistics import Verdict

    estimate = Estimate(1.25, 1.1, 1.4, 0.004, 6, 5, 2.0, 2.5)
    return [OpVerdict("main", 3, "conv", Verdict.REGRESSED, estimate, 0.01, "features.3", "m.py:12", "features.3 conv",
                      "model", 0.08),
            OpVerdict("main", 4, "relu", Verdict.INCONCLUSIVE, estimate, 0.5, blind="too noisy")]


def _verdicts() -> dict[str, list[Any]]:
    """Added after e9e8a89 (their `to_dict`s' JSON was written at b2277e6, the last commit that had them): every
    field of a pair's verdict set, as `compare --json` and verdicts.json write it, NaN and None included."""
    from orchestrator.base.errors import Blame
    from orchestrator.run.configuration import SettingDifference
    from orchestrator.verdicts.accuracy import AccuracyVerdict
    from orchestrator.verdicts.below import BelowThreshold
    from orchestrator.verdicts.estimates import Estimate
    from orchestrator.verdicts.figures import SideFigures
    from orchestrator.verdicts.likeness import IncompleteSide
    from orchestrator.verdicts.llm_metrics import MetricVerdict
    from orchestrator.verdicts.memory import MemoryVerdict
    from orchestrator.verdicts.noise import NoiseFloor
    from orchestrator.verdicts.pair_verdicts import Comparison, PairVerdict
    from orchestrator.verdicts.series import SeriesVerdict, Step
    from orchestrator.verdicts.series_clean import LeftOutNight
    from orchestrator.verdicts.statistics import Verdict, VerdictSettings
    from orchestrator.verdicts.trust import Load

    estimate = Estimate(1.25, 1.1, 1.4, 0.004, 6, 5, 2.0, 2.5)
    fast = Estimate(0.9, 0.8, math.nan, math.nan, 3, 3, 1.0, 0.9, "6 fast", "4 at 1.40x", "spans two readings")
    metrics = (MetricVerdict("ttft_ms", "time to first token", False, Verdict.REGRESSED, 1.25, 1.1, 1.4, 20.0, 25.0,
                             estimate),
               MetricVerdict("decode_tokens_per_s", "decode tokens/s", True, Verdict.INCONCLUSIVE, 1 / 0.9, math.nan,
                             1 / 0.8, 1000.0, 1111.1, fast))
    night = PairVerdict("pixel8", "mlp", "mlp", Verdict.REGRESSED, estimate, 0.05, 0.1, source_a="run-1+run-2",
                        source_b="run-3")
    calm = PairVerdict("pixel8", "mlp", "mlp", Verdict.UNCHANGED, None, 0.05, 0.1, source_a="run-1", source_b="run-3")
    series = (SeriesVerdict("the level before run run-2 (2 jobs)", ("run-0", "run-1"), night, night,
                            (Step("run-2", "2026-01-02", "abc", 1.2), Step("run-3", "2026-01-03", None, 1.1)), 4,
                            (LeftOutNight("run-7", 10, 60),)),
              SeriesVerdict("the pinned run run-0", ("run-0",), calm, None, (), 2))
    full = PairVerdict("pixel8", "mlp", "mlp-q", Verdict.REGRESSED, estimate, 0.05, 0.1, (), 2, None, None, True,
                       "run-a", "run-b", NoiseFloor(0.04, jobs=9, method="replicates", groups=3), None, None, metrics,
                       (SettingDifference("backend", "xnnpack", "portable"),), (IncompleteSide("A", "run-a", "partial"),),
                       BelowThreshold("slower", 1.03, 1.01, 1.05, 0.05), series[0],
                       AccuracyVerdict(None, 31.5, 1.0, 0.98, True, "SNR fell 9 dB"),
                       MemoryVerdict(1000, 1500, 0.1, True, "delegate +500 B"), 0.02, None, None,
                       (Load(3, 40), None), (1, 0), (SideFigures(2.0, 2.1, 60), None))
    blind = PairVerdict("rpi5", "mlp", "mlp", Verdict.INCONCLUSIVE, fast, 0.05, 0.1, noise=NoiseFloor(0.05, auto=False),
                        detectable=0.14, blind="too noisy: could see >= 14 %", settle="etfarm run --ab ...",
                        loads=(Load(3, 40), Load(0, 10)), figures=(None, SideFigures(1.0, 1.05, 30)))
    missing = PairVerdict("rpi5", "cnn", "cnn", Verdict.NO_DATA, reason="B has no result", blame=Blame.DATA,
                          noise=NoiseFloor(None, jobs=2))
    comparison = Comparison("run-a", "run-b", VerdictSettings(center="mean", auto_noise_floor=True),
                            (full, blind, missing))
    return {"MetricVerdict": list(metrics), "SeriesVerdict": list(series), "PairVerdict": [full, blind, missing],
            "Comparisons": [comparison, Comparison("run-a", "run-b", VerdictSettings(center="mean"))]}


def _numerics() -> dict[str, list[Any]]:
    """Added after 44fd0c8 (the `to_dict`s' JSON written at 44fd0c8): `numerics --json` and numerics.json, an SNR of
    identical outputs (infinite), a NaN gap and a stack trace (not written) included."""
    from orchestrator.numerics import AGAINST_AOT, Comparison, Gap, Metric, ModelNumerics, NumericsReport, OpGap

    same = OpGap(0, (1,), (1,), ("linear",), ("native_call_addmm.out",), (Gap(0.0, 0.0, math.inf),), 0.0, False, "fc1",
                 "torch.nn.modules.linear.Linear", "model.py:10", "File model.py, line 10")
    loud = OpGap(1, (2, 3), (4,), ("linear_1", "relu"), ("native_call_addmm.out",),
                 (Gap(5e-3, 0.05, 21.5), Gap(math.nan, 0.1, -math.inf)), 5e-3, True)
    calm = ModelNumerics("local", "mlp", (Comparison(AGAINST_AOT, (same,), ("run-1",), worst_index=0),), "pass",
                         "1 run(s) match", True)
    diverging = ModelNumerics("pi", "mlp", (Comparison(AGAINST_AOT, (same, loud), ("run-1", "run-2"), worst_index=1),
                                            Comparison("device:local", error="reference device local: no runs")),
                              "fail", "output 0 differs", False)
    broken = ModelNumerics("phone", "mlp", error="no debug buffer was pulled (run with --numerics)")
    return {"NumericsReport": [NumericsReport("r1", Metric.MSE, 1e-4, "local", (calm, diverging, broken)),
                               NumericsReport("r2", Metric.SNR, 40.0, None)]}


def _the_rest() -> dict[str, list[Any]]:
    """Added after 1a55e27 (their hand-written JSON forms written at 1a55e27): bisect --json and bisect.json, an LLM's
    manifest summary, the dashboard's series summary, a recipe export's recipe.json and phases, llm_reference.json."""
    from pathlib import Path

    from orchestrator.app.bisect_output import BisectResult
    from orchestrator.app.bisect_range import Commit, CommitRange
    from orchestrator.app.bisect_search import Outcome, Reason, Search, Step
    from orchestrator.artifacts.export_phases import ExportPhases
    from orchestrator.artifacts.generation import GenerationFigures
    from orchestrator.artifacts.llm import LlmReference, ReferenceGeneration
    from orchestrator.artifacts.recipes import RecipeInfo
    from orchestrator.report.dashboard.model import Change, Regression, Summary
    from orchestrator.results.llm_figures import LlmFigures
    from orchestrator.verdicts.likeness import SeriesKey

    good, commits = Commit("0" * 40, "good"), tuple(Commit(str(k) * 40, f"commit {k}") for k in range(1, 5))
    span = CommitRange(Path("/repo"), good, commits)
    bad = Step(commits[3].sha, "commit 4", Outcome.SLOWER, "regressed", 1.2, 1.1, 1.3, measured=True, page="p.html")
    same = Step(commits[1].sha, "commit 2", Outcome.SLOWER, "regressed", 1.2, None, None, reason="same program")
    skipped = Step(commits[0].sha, "commit 1", Outcome.SKIPPED, "skipped", reason="factory raised")
    bisects = [BisectResult(span, "m.py:build", Search(1, Reason.FOUND, (bad, same)), (commits[3].sha,), budget=4),
               BisectResult(span, "m.py:build", Search(None, Reason.ALL_SKIPPED, (skipped,), (0, 1)), ()),
               BisectResult(span, "m.py:build", Search(None, Reason.BUDGET, (bad,)), (commits[3].sha,), budget=1)]
    gens = (GenerationFigures(20.0, 18.0, 400.0, 100.0, 150.0, (6.0, 7.0), 120.0, 2048, -1, 4096, -1, (1, 2)),
            GenerationFigures(22.0, 19.0, 380.0, 110.0, 140.0, (6.5, 7.5), 132.0, 2100, -1, 4000, -1, (1, 2)))
    llm = [LlmFigures(8, 3, 1, 2, 2, gens, gens[:1]), LlmFigures(8, 1, 1, 0, 0, ())]
    key = SeriesKey("pixel8", "mlp", (("backend", "xnnpack"), ("threads", "4")))
    summaries = [Summary(key, "pixel8-mlp-1", 9, (2.0, 1.9, 2.2), "regressed", True, None,
                         (Change("2026-01-03", "run-3", 2.0, 2.6, "abc..def"),),
                         (Regression("2026-01-04", "run-4", 1.3, True, "abc", "../nights/n.html", "c" * 40),
                          Regression("2026-01-05", "run-5", None, None, "", "")),
                         (2.0, 2.1, 2.6), (False, False, True), "2026-01-04"),
                 Summary(key, "pixel8-mlp-2", 1, None, None, False, None, (), (), (), (), "")]
    return {"BisectResult": bisects, "LlmFigures": llm, "Summary": summaries,
            "RecipeInfo": [RecipeInfo("int8", "int8 static", "xnnpack_pt2e_int8_static_per_channel", True, 4, "model"),
                           RecipeInfo("fp32", "fp32", "xnnpack_fp32", False)],
            "ExportPhases": [ExportPhases((("capture", 1.23456), ("lowering", 2.0), ("host reference", 0.0004))),
                             ExportPhases(())],
            "LlmReference": [LlmReference(7, 16, (ReferenceGeneration(3, (1, 2, 3), (4, 5)),
                                                  ReferenceGeneration(2, (9, 8), ())))]}


def written(objects: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """What each object's JSON form is (its `to_dict` or `to_json`, or the codec's `encode` of it or of its
    `document()`, a bisect's)."""
    from orchestrator.base.codec import encode

    return {name: [obj.to_dict() if hasattr(obj, "to_dict") else obj.to_json() if hasattr(obj, "to_json")
                   else encode(obj.document()) if hasattr(obj, "document") else encode(obj)
                   for obj in objs] for name, objs in objects.items()}


def main() -> None:
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(written(samples()), indent=1) + "\n")


if __name__ == "__main__":
    main()

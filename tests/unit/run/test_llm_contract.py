"""The runner's result in generation mode and PSS: the `llm` object typed and checked against what was asked
(runner_contract.py), kept per process run (results.ProcessRun.llm), summarised (results/llm_figures.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from orchestrator.artifacts.generation import GenerationArgs
from orchestrator.base.errors import DataError
from orchestrator.results.llm_figures import DECODE_RATE, TTFT, llm_figures, metric_runs
from orchestrator.results.model import ProcessRun
from orchestrator.run.runner_contract import RunnerInvocation, parse_result

ASKED = GenerationArgs(prompt_len=4, gen_len=3, prompt_seed=7)
INVOCATION = RunnerInvocation(runner="/w/r", model="/w/m.pte", inputs="/w/in.etft", out_dir="/w/out", iterations=2,
                              warmup=1, traced=True, calibration_rounds=0, generation=ASKED)


def generation(ttft: float = 2.0, steps: tuple[float, ...] = (0.5, 0.5), tokens: tuple[int, ...] = (5, 6, 7)) -> dict:
    decode = sum(steps)
    return {"ttft_ms": ttft, "prefill_ms": ttft - 0.01, "prefill_tokens_per_s": 4 / (ttft - 0.01) * 1000,
            "decode_ms": decode, "decode_tokens_per_s": len(steps) / decode * 1000, "decode_step_ms": list(steps),
            "total_ms": ttft + decode, "rss_prefill_kb": 900, "pss_prefill_kb": 600, "rss_decode_kb": 950,
            "pss_decode_kb": 650, "tokens": list(tokens)}


def llm(**changes: Any) -> dict[str, Any]:
    obj = {"max_seq_len": 16, "max_context_len": 16, "vocab_size": 10, "dynamic_shape": True, "prefill_chunk": 15,
           "prefill_calls": 1, "prompt_len": 4, "prompt_seed": 7, "prompt_tokens": [1, 2, 3, 4], "gen_len": 3,
           "requested_gen_len": 3, "decode_steps": 2, "generations": [generation(), generation(3.0)]}
    obj.update(changes)
    return obj


def line(**changes: Any) -> str:
    data = {"method": "forward", "load_ms": 1.0, "program_load_ms": 0.5, "warmup": 1, "executions": 2,
            "execute_ms": [3.0, 4.0], "etdump": True, "cpu_threads": 2, "debug_buffer_used": 0,
            "debug_buffer_overflow": False, "peak_rss_load_kb": 800, "peak_rss_kb": 1000, "planned_memory_bytes": 10,
            "program_bytes": 100, "backends": ["XnnpackBackend"], "runner_ms": 9.0, "pss_load_kb": 500,
            "pss_kb": 700, "mode": "generate", "llm": llm()}
    data.update(changes)
    return "ETFARM_RESULT " + json.dumps({k: v for k, v in data.items() if v is not None}) + "\n"


def test_the_invocation_generates_instead_of_reading_inputs() -> None:
    argv = INVOCATION.argv()
    assert "--generate" in argv and "--prompt_len=4" in argv and "--prompt_seed=7" in argv and "--gen_len=3" in argv
    assert not any(a.startswith("--inputs") for a in argv)
    assert replace(INVOCATION, traced=False).argv().count("--generate") == 1  # untraced runs generate too
    assert "--inputs=/w/in.etft" in replace(INVOCATION, generation=None).argv()


def test_a_generation_line_is_typed_and_kept_per_process_run() -> None:
    result = parse_result(line(), INVOCATION, "dev")
    assert result.mode == "generate" and result.pss_kb == 700 and result.llm is not None
    assert result.llm.generations[1].ttft_ms == 3.0 and result.extra == {"backends": ["XnnpackBackend"]}
    assert result.to_dict()["llm"]["generations"][0]["tokens"] == [5, 6, 7]
    run = ProcessRun.from_runner(result, label="run-1", traced=True)
    assert run.llm == result.llm and (run.pss_load_kb, run.pss_kb) == (500, 700)
    assert "llm" not in run.runner and run.runner["mode"] == "generate"
    assert ProcessRun.from_dict(json.loads(json.dumps(run.to_dict()))) == run  # the manifest round-trips it


@pytest.mark.parametrize(("changes", "why"), [
    ({"llm": llm(generations=[generation()])}, "1 generations for 2 executions"),
    ({"llm": llm(prompt_len=5, prompt_tokens=[1, 2, 3, 4, 5])}, "prompt of 5 tokens"),
    ({"llm": llm(gen_len=4)}, "gen_len 4"),
    ({"llm": llm(prefill_calls=2)}, "2 prefill calls"),
    ({"llm": llm(generations=[generation(), generation(steps=(0.5,))])}, "1 decode steps"),
    ({"llm": llm(generations=[generation(), generation(tokens=(5, 6, 10))])}, "outside the vocabulary of 10"),
    ({"llm": llm(generations=[generation(), {**generation(), "decode_step_ms": [-1.0, 0.5]}])}, "outside [0,"),
    ({"llm": llm(generations="x")}, "llm figures are malformed"),
    ({"llm": None}, "without an llm object"),
    ({"mode": "forward"}, "mode is 'forward'"),
    ({"pss_kb": 1001}, "pss_kb is 1001 KiB, above the peak RSS of 1000 KiB"),
    ({"pss_load_kb": 2000}, "pss_load_kb is 2000 KiB, above the peak RSS"),
    ({"pss_kb": -2}, "pss_kb is -2: outside [-1,"),
])
def test_what_does_not_hold_fails_the_device_as_data(changes: dict[str, Any], why: str) -> None:
    with pytest.raises(DataError, match="dev: the runner's result does not hold") as caught:
        parse_result(line(**changes), INVOCATION, "dev")
    assert why in str(caught.value)


def test_generation_figures_where_none_was_asked_for_are_refused() -> None:
    with pytest.raises(DataError, match="no generation was asked for"):
        parse_result(line(), replace(INVOCATION, generation=None), "dev")
    forward = parse_result(line(mode="forward", llm=None), replace(INVOCATION, generation=None), "dev")
    assert forward.llm is None and forward.pss_kb == 700
    unknown = parse_result(line(mode=None, llm=None, pss_kb=-1, peak_rss_kb=-1), replace(INVOCATION, generation=None), "d")
    assert unknown.pss_kb == -1  # -1: the device could not tell, whatever the peak


def test_figures_over_runs_and_the_verdicts_samples() -> None:
    traced = ProcessRun.from_runner(parse_result(line(), INVOCATION, "d"), label="run-1", traced=True)
    untraced = ProcessRun.from_runner(parse_result(line(etdump=False), replace(INVOCATION, traced=False), "d"),
                                      label="e2e-1", traced=False)
    figures = llm_figures([traced, untraced])
    assert figures is not None and figures.runs == 1 and len(figures.generations) == 2 and len(figures.untraced) == 2
    assert figures.ttft_ms == 2.5 and figures.decode_tokens_per_s == pytest.approx(2000.0)
    assert figures.step_ms == (0.5, 0.5) and figures.memory_kb("pss_decode_kb") == 650
    assert metric_runs([traced, untraced], TTFT) == [(2.0, 3.0)]  # traced runs only
    assert metric_runs([traced], DECODE_RATE) == [(0.5, 0.5)]  # decode ms per generated token
    summary = traced.to_dict()
    assert summary["llm"]["prompt_seed"] == 7
    assert llm_figures([replace(traced, llm=None)]) is None

"""run/engine/sweep.py: each program checked, an LLM recognised from its .pte, a job's sweep made one model per point;
app/run.py's list options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.app.request import JobRequest, int_list
from orchestrator.artifacts.generation import GenerationArgs, Workload
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.errors import DataError, UsageError
from orchestrator.results.job_config import JobOptions
from orchestrator.run.engine.sweep import sweep_models
from tests.helpers.pte_programs import forward_program, llm_plans, program


def model(tmp_path: Path, name: str, data: bytes, reference: dict | None = None) -> ExportedModel:
    pte = tmp_path / f"{name}.pte"
    pte.write_bytes(data)
    ref = None
    if reference is not None:
        ref = tmp_path / f"{name}.llm_reference.json"
        ref.write_text(json.dumps(reference))
    return ExportedModel(name, f"{name}.py:build", "xnnpack", "k" * 16, pte, None, None, None, cached=True,
                         llm_reference=ref)


def reference(*prompts: int, gen_len: int = 16, seed: int = 3) -> dict:
    return {"format": "etfarm-llm-reference/1", "prompt_seed": seed, "gen_len": gen_len,
            "generations": [{"prompt_len": p, "prompt_tokens": list(range(1, p + 1)), "tokens": [1]} for p in prompts]}


def test_models_are_checked_and_llms_generate_the_reference_s_default(tmp_path: Path) -> None:
    llm = model(tmp_path, "llm", program(llm_plans()), reference(8, 40))  # context 256
    cnn = model(tmp_path, "cnn", forward_program())
    points = sweep_models([llm, cnn], JobOptions())
    assert [(m.name, k) for m, k in points] == [("llm", 0), ("cnn", 1)]
    assert points[0][0].workload == Workload(0, GenerationArgs(40, 16, 3))  # the covered prompt nearest 32
    assert points[1][0].workload == Workload()
    bare = model(tmp_path, "bare", program(llm_plans()))
    assert sweep_models([bare], JobOptions())[0][0].workload.generation == GenerationArgs(32, 32, 0)


def test_lists_make_one_model_per_point_named_after_it(tmp_path: Path) -> None:
    llm = model(tmp_path, "llm", program(llm_plans()))
    cnn = model(tmp_path, "cnn", forward_program())
    options = JobOptions(thread_counts=(1, 2), prompt_lens=(8, 64), gen_lens=(16,))
    names = [m.name for m, _ in sweep_models([llm, cnn], options)]
    assert names == ["llm-t1-p8", "llm-t1-p64", "llm-t2-p8", "llm-t2-p64", "cnn-t1", "cnn-t2"]
    point = sweep_models([llm], options)[3][0]
    assert point.workload == Workload(2, GenerationArgs(64, 16, 0)) and point.pte == llm.pte


@pytest.mark.parametrize(("options", "error", "why"), [
    (JobOptions(prompt_lens=(250,), gen_lens=(8,)), UsageError, "do not fit its context of 256 positions"),
    (JobOptions(numerics=True, intermediate_outputs=True), UsageError, "is an LLM program"),
])
def test_points_an_llm_cannot_run_are_usage_errors(tmp_path: Path, options: JobOptions, error: type, why: str) -> None:
    with pytest.raises(error, match=why):
        sweep_models([model(tmp_path, "llm", program(llm_plans()))], options)


def test_a_prompt_longer_than_the_context_is_named_without_a_negative_token_count(tmp_path: Path) -> None:
    """Issue 31: `--prompt-len 300` on a 256-position program said 'a 300-token prompt and -43 generated tokens'."""
    with pytest.raises(UsageError) as refused:
        sweep_models([model(tmp_path, "llm", program(llm_plans()))], JobOptions(prompt_lens=(300,)))
    assert str(refused.value) == "llm: a 300-token prompt does not fit its context of 256 positions"


def test_generation_lengths_need_an_llm_and_programs_must_load(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="apply to LLM programs"):
        sweep_models([model(tmp_path, "cnn", forward_program())], JobOptions(gen_lens=(8,)))
    with pytest.raises(DataError, match="not an ExecuTorch program"):
        sweep_models([model(tmp_path, "junk", b"\x00" * 64)], JobOptions())
    with pytest.raises(UsageError, match="sweep names two models 'a-p8'"):  # prompt lengths name LLMs only
        sweep_models([model(tmp_path, "a", program(llm_plans())), model(tmp_path, "a-p8", forward_program())],
                     JobOptions(prompt_lens=(8, 32)))


def test_list_options() -> None:
    assert int_list("--threads", "1, 2,4", least=0) == (1, 2, 4) and int_list("--threads", 3, least=0) == (3,)
    assert int_list("--gen-len", None, least=1) == ()
    for bad in ("1,x", "0", "2,2", "99999999"):
        with pytest.raises(UsageError, match="--gen-len"):
            int_list("--gen-len", bad, least=1)
    options = JobRequest(threads="1,2", prompt_len="32,128", gen_len="16").run_options()
    assert (options.cpu_threads, options.thread_counts, options.prompt_lens, options.gen_lens) == (0, (1, 2), (32, 128),
                                                                                                   (16,))
    assert JobRequest(threads="2").run_options().cpu_threads == 2 and JobRequest(threads="2").run_options().thread_counts == ()
    with pytest.raises(UsageError, match="--ab compares two models at one point"):
        JobRequest(ab=("a.py:f", "b.py:f"), threads="1,2").check()


def test_two_configurations_named_alike_are_refused_before_any_export(tmp_path: Path) -> None:
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.artifacts.recipes import RecipeSpec
    from orchestrator.run.engine.sweep import export_configurations

    (tmp_path / "m.py").write_text("raise SystemExit('never imported: names are checked first')\n")
    specs = [parse_model_spec(f"{tmp_path / 'm.py'}:build", "m-a"), parse_model_spec(f"{tmp_path / 'm.py'}:build", "m")]
    from orchestrator.run.engine import sweep

    recipes = (RecipeSpec("r.py:b", "b"), RecipeSpec("r.py:a_b", "a-b"))  # "m-a" + "b" and "m" + "a-b": "m-a-b"
    with pytest.raises(UsageError, match="the sweep names two models 'm-a-b'"):
        sweep._check_configuration_names(specs, recipes)
    with pytest.raises(UsageError, match="--recipe: recipe 'fp32' given twice"):
        export_configurations(specs, "xnnpack", JobOptions(recipes=("fp32", "fp32")), lambda line: None)

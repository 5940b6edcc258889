"""LLM recipes, seeded prompts, the eager reference and token checks, the runner's generation
flags and figures, and how an export dispatches on a factory's result (export_llama faked here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.artifacts import lowering
from orchestrator.artifacts.generation import DECODE, PREFILL, GenerationArgs, LlmRunFigures, phase_of_call
from orchestrator.artifacts.llm import LlmRecipe, LlmReference, ReferenceGeneration, check_tokens, seeded_prompt
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.codec import encode
from orchestrator.base.errors import DataError, ModelSpecError

PARAMS = {"dim": 64, "n_layers": 2, "n_heads": 4, "vocab_size": 512}


def test_seeded_prompt_is_the_runners() -> None:
    # Printed by runners/etfarm_llm.h (seeded_prompt) for these seeds: the host must reproduce them.
    assert seeded_prompt(0, 8, 512) == [416, 464, 276, 411, 346, 136, 387, 157]
    assert seeded_prompt(0, 6, 64) == [17, 37, 38, 26, 59, 31]
    ids = seeded_prompt(12345, 1000, 7)
    assert min(ids) >= 1 and max(ids) <= 6 and len(set(ids)) == 6
    assert seeded_prompt(0, 3, 512) == seeded_prompt(0, 8, 512)[:3]


def test_recipe_builds_the_export_llama_command() -> None:
    recipe = LlmRecipe(params=PARAMS, max_seq_len=64, export_args=("-qmode", "8da4w", "-G", "32"))
    argv = recipe.export_argv(Path("/w/params.json"), Path("/w/weights.pth"), Path("/out/model.pte"), "xnnpack")
    assert argv[:8] == ["--model", "llama3", "--params", "/w/params.json", "--checkpoint", "/w/weights.pth", "-kv", "-d"]
    assert "-X" in argv and "--generate_etrecord" in argv and argv[-4:] == ["-qmode", "8da4w", "-G", "32"]
    assert argv[argv.index("--max_context_length") + 1] == "64" and argv[argv.index("-n") + 1] == "/out/model.pte"
    portable = recipe.export_argv(Path("p"), Path("w"), Path("o.pte"), "portable")
    assert "-X" not in portable


@pytest.mark.parametrize("kwargs, fragment", [
    ({"params": {"dim": 8}}, "needs integer n_layers, n_heads, vocab_size"),
    ({"dtype": "int4"}, "choose one of fp32, fp16, bf16"),
    ({"max_seq_len": 64, "max_context_len": 32}, "max_context_len at least max_seq_len"),
    ({"export_args": ("--checkpoint=x.pth",)}, "etfarm sets --checkpoint itself"),
    ({"export_args": ("-kv",)}, "etfarm sets -kv itself"),
    ({"prompt_lens": (128,)}, "prompt_lens must lie in [1, 128)"),
    ({"prompt_lens": ()}, "prompt_lens"),
    ({"gen_len": 0}, "gen_len >= 1"),
])
def test_recipe_refuses_what_cannot_be_exported(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ModelSpecError, match=fragment.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        LlmRecipe(**{"params": PARAMS, **kwargs})


def _reference() -> LlmReference:
    return LlmReference(0, 32, (ReferenceGeneration(3, (5, 6, 7), (9, 8, 7, 6)),))


def test_reference_round_trips_and_checks_tokens(tmp_path: Path) -> None:
    path = tmp_path / "llm_reference.json"
    path.write_text(json.dumps(encode(_reference())))
    ref = LlmReference.load(path)
    assert ref == _reference()
    ok = check_tokens(ref, [5, 6, 7], [9, 8, 7])
    assert ok is not None and ok.ok and ok.compared == 3
    bad = check_tokens(ref, (5, 6, 7), (9, 8, 1, 6, 0))
    assert bad is not None and not bad.ok and bad.first_mismatch == 2 and bad.compared == 4
    assert check_tokens(ref, [1, 2, 3], [9]) is None, "no reference for another prompt"
    empty = check_tokens(ref, [5, 6, 7], [])
    assert empty is not None and not empty.ok


def test_damaged_reference_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "llm_reference.json"
    for text in ("not json", json.dumps({"format": "other"}), json.dumps({**encode(_reference()), "generations": [{}]})):
        path.write_text(text)
        with pytest.raises(DataError, match="not an etfarm LLM reference"):
            LlmReference.load(path)


def test_generation_args_are_runner_flags() -> None:
    assert GenerationArgs().argv() == ["--generate", "--prompt_len=32", "--prompt_seed=0", "--gen_len=32"]
    assert GenerationArgs(gen_len=8, prompt_file="/d/p.etft").argv() == ["--generate", "--prompt_file=/d/p.etft", "--gen_len=8"]


def _figures() -> dict[str, Any]:
    generation = {"ttft_ms": 2.5, "prefill_ms": 2.4, "prefill_tokens_per_s": 3333.3, "decode_ms": 1.5,
                  "decode_tokens_per_s": 2000.0, "decode_step_ms": [0.5, 0.5, 0.5], "total_ms": 4.0,
                  "rss_prefill_kb": 100, "pss_prefill_kb": 80, "rss_decode_kb": 101, "pss_decode_kb": 81, "tokens": [1, 2, 3, 4]}
    return {"max_seq_len": 128, "max_context_len": 128, "vocab_size": 512, "dynamic_shape": False, "prefill_chunk": 1,
            "prefill_calls": 8, "prompt_len": 8, "prompt_seed": None, "prompt_tokens": list(range(8)), "gen_len": 4,
            "requested_gen_len": 4, "decode_steps": 3, "generations": [generation, generation]}


def test_llm_figures_parse_and_phase_the_forward_calls() -> None:
    figures = LlmRunFigures.from_json(_figures())
    assert figures.prompt_seed is None and figures.calls_per_generation == 11 and len(figures.generations) == 2
    assert figures.generations[0].decode_step_ms == (0.5, 0.5, 0.5) and figures.generations[1].tokens == (1, 2, 3, 4)
    phases = [figures.phase_of_call(k) for k in range(22)]
    assert phases == ([PREFILL] * 8 + [DECODE] * 3) * 2
    assert phase_of_call(0, 1, 31) == PREFILL and phase_of_call(1, 1, 31) == DECODE and phase_of_call(32, 1, 31) == PREFILL
    broken = _figures()
    del broken["generations"][0]["tokens"]
    with pytest.raises(DataError, match="malformed"):
        LlmRunFigures.from_json(broken)


LLM_MODEL = """
from orchestrator.artifacts.llm import LlmRecipe

def build():
    return LlmRecipe(params={"dim": 8, "n_layers": 1, "n_heads": 2, "vocab_size": 16}, max_seq_len=8, prompt_lens=(2,))

def broken():
    return LlmRecipe(params={"dim": 8}, max_seq_len=8)
"""


def test_a_recipe_factory_exports_through_export_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[LlmRecipe, str, Path]] = []

    def fake_export(recipe: LlmRecipe, backend: str, pte: Path, quiet: Any = None) -> str | None:
        calls.append((recipe, backend, pte))
        pte.write_bytes(b"program")
        (pte.parent / lowering.ETRECORD_NAME).write_bytes(b"record")
        (pte.parent / lowering.LLM_REFERENCE_NAME).write_text(json.dumps(encode(_reference())))
        return None

    monkeypatch.setattr(lowering, "export_llm_into", fake_export)  # where export_model calls it
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "tiny_lm.py"
    source.write_text(LLM_MODEL)
    model = lowering.export_model(parse_model_spec(f"{source}:build"), "portable")
    assert len(calls) == 1 and calls[0][1] == "portable" and calls[0][0].params["vocab_size"] == 16
    assert model.llm_reference is not None and model.inputs is None and model.reference_outputs is None
    assert model.etrecord is not None and not model.cached
    meta = json.loads((model.pte.parent / lowering.META_NAME).read_text())
    assert meta["kind"] == "llm" and meta["llm_reference_error"] is None
    again = lowering.export_model(parse_model_spec(f"{source}:build"), "portable")
    assert again.cached and len(calls) == 1 and again.llm_reference == model.llm_reference
    copied = {p.name for p in lowering.copy_artifacts(again, tmp_path / "out")}
    assert copied == {"model.pte", "etrecord.bin", "llm_reference.json"}
    with pytest.raises(ModelSpecError, match=r"tiny_lm.py:broken'.*LlmRecipe.params needs integer"):
        lowering.export_model(parse_model_spec(f"{source}:broken"))


def test_a_factory_returning_something_else_names_both_contracts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "odd.py"
    source.write_text("def build():\n    return 42\n")
    with pytest.raises(ModelSpecError, match=r"must return \(torch.nn.Module, example_inputs_tuple\) or an LlmRecipe, got int"):
        lowering.export_model(parse_model_spec(f"{source}:build"))

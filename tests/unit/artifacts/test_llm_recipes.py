"""An export recipe on an LLM exported by export_llama: its counterpart flags, or that configuration left out."""

from __future__ import annotations

import pytest

from orchestrator.artifacts.llm import LlmRecipe
from orchestrator.artifacts.llm_recipes import llm_under_recipe
from orchestrator.artifacts.recipes import RecipeSpec
from orchestrator.base.errors import ExportError

PARAMS = {"dim": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "vocab_size": 512}


@pytest.mark.parametrize(("member", "label", "flags", "quantized"), [
    ("FP32", "fp32", (), False),
    ("PT2E_INT8_DYNAMIC_PER_CHANNEL", "int8-dynamic", ("--pt2e_quantize", "xnnpack_dynamic"), True),
    ("TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL", "int8da-int4w", ("-qmode", "8da4w", "-G", "32"), True),
])
def test_recipes_with_a_counterpart_become_export_llamas_flags(member: str, label: str, flags: tuple[str, ...],
                                                               quantized: bool) -> None:
    llm, info = llm_under_recipe("tiny_llama.py:build", LlmRecipe(PARAMS), RecipeSpec(label, label, member))
    assert llm.export_args == flags and (info.label, info.quantized, info.calibration_batches) == (label, quantized, None)
    assert info.name == "export_llama " + (" ".join(flags) or "-d fp32")


def test_static_int8_and_a_quantizing_llm_recipe_fail_that_configuration() -> None:
    static = RecipeSpec("int8-static", "int8-static", "PT2E_INT8_STATIC_PER_CHANNEL")
    with pytest.raises(ExportError, match="recipe int8-static does not apply to 'l.py:build', an LLM exported by "
                                          "export_llama: it quantizes with its own options, of which etfarm maps FP32"):
        llm_under_recipe("l.py:build", LlmRecipe(PARAMS), static)
    dynamic = RecipeSpec("int8-dynamic", "int8-dynamic", "PT2E_INT8_DYNAMIC_PER_CHANNEL")
    with pytest.raises(ExportError, match=r"already say how to export it"):
        llm_under_recipe("l.py:build", LlmRecipe(PARAMS, export_args=("-qmode", "8da4w")), dynamic)
    fp32 = RecipeSpec("fp32", "fp32", "FP32")  # fp32 adds nothing: the LlmRecipe's own flags stand
    assert llm_under_recipe("l.py:build", LlmRecipe(PARAMS, export_args=("-qmode", "8da4w")), fp32)[0].export_args == (
        "-qmode", "8da4w")

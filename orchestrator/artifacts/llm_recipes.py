"""An export recipe (`--recipe`) applied to an LLM that ExecuTorch's export_llama exports (docs/guide/model-zoo.md).

export_llama quantizes with its own options, not through the export API's recipes; the recipes that have an
export_llama counterpart are mapped onto it, so a sweep `--recipe fp32,int8-dynamic,int8da-int4w` covers LLMs
and other models alike. A recipe without a counterpart (static int8: export_llama calibrates only through
its own evaluation tasks; a user's recipe factory) fails that configuration alone: an ExportError, left out.
Torch-free.
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.artifacts.llm import LlmRecipe
from orchestrator.artifacts.recipes import RecipeInfo, RecipeSpec
from orchestrator.base.errors import ConfigurationFailed

# XNNPackRecipeType member -> export_llama's flags for the same quantization.
LLM_RECIPE_ARGS: dict[str, tuple[str, ...]] = {
    "FP32": (),
    "PT2E_INT8_DYNAMIC_PER_CHANNEL": ("--pt2e_quantize", "xnnpack_dynamic"),
    "TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL": ("-qmode", "8da4w", "-G", "32"),
}


def llm_under_recipe(spec_text: str, llm: LlmRecipe, recipe: RecipeSpec) -> tuple[LlmRecipe, RecipeInfo]:
    """`llm` with export_llama's flags for `recipe`, and what recipe.json records; an ExportError (that
    configuration left out) when export_llama has no counterpart or the LlmRecipe already quantizes."""
    args = LLM_RECIPE_ARGS.get(recipe.member or "")
    if args is None:
        offered = ", ".join(f"{member} ({' '.join(flags) or 'no flags'})" for member, flags in LLM_RECIPE_ARGS.items())
        raise ConfigurationFailed(f"recipe {recipe.label} does not apply to {spec_text!r}, an LLM exported by export_llama: it "
                          f"quantizes with its own options, of which etfarm maps {offered}")
    if args and llm.export_args:
        raise ConfigurationFailed(f"recipe {recipe.label} does not apply to {spec_text!r}: its LlmRecipe.export_args "
                          f"({' '.join(llm.export_args)}) already say how to export it; drop them or the recipe")
    info = RecipeInfo(recipe.text, recipe.label, "export_llama " + (" ".join(args) or "-d fp32"), bool(args))
    return replace(llm, export_args=llm.export_args + args), info

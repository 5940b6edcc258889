"""Export recipes as a configuration: names read from the installed ExecuTorch without importing it, parsing of
`--recipe`, and the backend a named recipe lowers to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.artifacts import recipes
from orchestrator.artifacts.recipes import (
    RecipeSpec,
    available_recipes,
    check_recipe_backend,
    parse_recipes,
    recipe_words,
)
from orchestrator.base.errors import UsageError

INSTALLED = {"fp32": "FP32", "int8-dynamic": "PT2E_INT8_DYNAMIC_PER_CHANNEL", "int8-static": "PT2E_INT8_STATIC_PER_CHANNEL",
             "int8-static-per-tensor": "PT2E_INT8_STATIC_PER_TENSOR",
             "int8da-int4w": "TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL",
             "int8da-int4w-per-tensor": "TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR"}


def test_names_are_what_the_installed_executorch_defines_read_without_importing_it() -> None:
    assert available_recipes() == INSTALLED  # executorch 1.5.1's XNNPackRecipeType, in its order
    code = ("import sys; from orchestrator.artifacts.recipes import available_recipes; available_recipes(); "
            "print(sorted(m for m in ('torch', 'executorch') if m in sys.modules))")
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert probe.stdout.strip() == "[]", probe.stderr


def test_a_recipe_type_a_later_executorch_adds_gets_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    types = tmp_path / "xnnpack_recipe_types.py"
    types.write_text('class XNNPackRecipeType(RecipeType):\n    FP32 = "xnnpack_fp32"\n'
                     '    PT2E_INT4_WEIGHT_ONLY = "xnnpack_pt2e_int4_weight_only"\n    FP16 = "xnnpack_fp16"\n')
    monkeypatch.setattr(recipes, "_types_file", lambda: types)
    available_recipes.cache_clear()
    try:
        assert available_recipes() == {"fp32": "FP32", "int4-weight-only": "PT2E_INT4_WEIGHT_ONLY", "fp16": "FP16"}
        assert parse_recipes("fp16")[0].member == "FP16"
    finally:
        available_recipes.cache_clear()


def test_a_list_sweeps_in_the_order_given_and_is_recorded_as_written() -> None:
    parsed = parse_recipes("int8-static, fp32")
    assert [(r.label, r.member) for r in parsed] == [("int8-static", "PT2E_INT8_STATIC_PER_CHANNEL"), ("fp32", "FP32")]
    assert recipe_words(parsed) == ("int8-static", "fp32") and parse_recipes(None) == ()


@pytest.mark.parametrize(("text", "message"), [
    ("int9", "--recipe: unknown recipe 'int9'; this ExecuTorch offers fp32, int8-dynamic, int8-static, "
             "int8-static-per-tensor, int8da-int4w, int8da-int4w-per-tensor (or FILE.py:FACTORY"),
    ("fp32,,int8-static", "has an empty recipe name"),
    ("fp32,fp32", "recipe 'fp32' given twice"),
    ("nowhere.py:make", "recipe factory 'nowhere.py:make'"),
])
def test_bad_recipes_are_one_usage_error_naming_them(text: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_recipes(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_factory_recipe_is_named_after_its_factory_and_keyed_by_its_sources(tmp_path: Path) -> None:
    source = tmp_path / "recipes.py"
    source.write_text("import helper\n\ndef make():\n    return None\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    (recipe,) = parse_recipes(f"{source}:make")
    assert recipe.label == "make" and recipe.member is None
    before = recipe.key_parts()
    (tmp_path / "helper.py").write_text("X = 2\n")  # a module the factory imports changed: another export
    assert recipe.key_parts() != before


def test_a_named_recipe_lowers_to_xnnpack_only() -> None:
    check_recipe_backend("xnnpack", parse_recipes("int8-static"))
    with pytest.raises(UsageError, match="--backend portable: recipe fp32 lowers to xnnpack"):
        check_recipe_backend("portable", parse_recipes("fp32,int8-static"))
    check_recipe_backend("portable", (RecipeSpec("r.py:make", "make"),))  # a factory's recipe says how it lowers


def test_the_recipe_help_keeps_every_word_short_enough_for_an_80_column_help() -> None:
    """`--help` cut `int8-static-per-tens…` (issue 35): a name's -per-tensor variant is said beside it."""
    from orchestrator.artifacts.recipes import available_recipes, recipe_help

    text = recipe_help()
    assert all(len(word) <= 22 for word in text.split()), [w for w in text.split() if len(w) > 22]
    for name in available_recipes():
        base = name.removesuffix("-per-tensor")
        assert base in text and (name == base or f"{base} (-per-tensor)" in text)

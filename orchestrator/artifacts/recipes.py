"""Export recipes as a configuration (docs/how-to/quantized.md): their names, and parsing `--recipe`.

ExecuTorch's export API (`executorch.export.export(model, [inputs], ExportRecipe)`) lowers a model the way a
recipe says: FP32, or quantized (PT2E int8 static or dynamic, torchao int8 activations with int4 weights).
etfarm names the recipe types the installed ExecuTorch's XNNPACK provider registers by short names
(`fp32`, `int8-static`, ...); a word with a `:` is a user's factory, `file.py:make` or `module:make`,
returning its own `ExportRecipe`. `--recipe fp32,int8-static` sweeps: one configuration per recipe.

The names are read from the installed ExecuTorch's source (`xnnpack_recipe_types.py`, with `ast`), not by
importing it: importing executorch costs the torch import (~5 s), and `etfarm --help` lists the names. A
recipe type that a later ExecuTorch adds and this table does not know still gets a name (its value without
the `xnnpack_`/`pt2e_`/`torchao_` prefixes, `_` as `-`); the export checks the name against the live registry.
Torch-free.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from orchestrator.artifacts.model_sources import local_sources
from orchestrator.artifacts.modelspec import ModelSpec, parse_model_spec
from orchestrator.base.codec import decode
from orchestrator.base.errors import ModelSpecError, UsageError

RECIPE_BACKEND = "xnnpack"  # the provider whose recipe types etfarm names: the backend its runners carry
_TYPES_FILE = ("backends", "xnnpack", "recipes", "xnnpack_recipe_types.py")
_TYPES_CLASS = "XNNPackRecipeType"
# ExecuTorch's member name -> etfarm's short name. The first static int8 recipe is per channel: the common one.
SHORT_NAMES = {
    "FP32": "fp32",
    "PT2E_INT8_STATIC_PER_CHANNEL": "int8-static",
    "PT2E_INT8_STATIC_PER_TENSOR": "int8-static-per-tensor",
    "PT2E_INT8_DYNAMIC_PER_CHANNEL": "int8-dynamic",
    "TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_CHANNEL": "int8da-int4w",
    "TORCHAO_INT8_DYNAMIC_ACT_INT4_WEIGHT_PER_TENSOR": "int8da-int4w-per-tensor",
}
FACTORY_FORM = "FILE.py:FACTORY or module:FACTORY returning an executorch.export.ExportRecipe"


@dataclass(frozen=True)
class RecipeSpec:
    """One recipe of a job: a named recipe type of the installed ExecuTorch, or a user's factory."""

    text: str  # as the user wrote it: a short name, or a factory spec
    label: str  # in model names and tables: the short name, or the factory's name
    member: str | None = None  # XNNPackRecipeType member (FP32, PT2E_INT8_STATIC_PER_CHANNEL, ...); None: a factory
    factory: ModelSpec | None = None  # the factory returning an ExportRecipe

    def key_parts(self) -> list[bytes | str]:
        """What the export's cache key adds for this recipe: its identity, the factory's sources, torchao's version."""
        parts: list[bytes | str] = ["recipe", self.text, self.member or "", _version("torchao")]
        if self.factory is not None:
            source = self.factory.source
            for path in local_sources(source):
                parts += [str(path.relative_to(source.parent)), path.read_bytes()]
            parts.append(self.factory.factory or "")
        return parts


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


@functools.lru_cache(maxsize=1)
def available_recipes() -> dict[str, str]:
    """Short name -> XNNPackRecipeType member, for every recipe type the installed ExecuTorch defines (in its
    order); empty without ExecuTorch."""
    path = _types_file()
    if path is None:
        return {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    members = [target.id for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == _TYPES_CLASS
               for item in node.body if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
               and isinstance(item.value.value, str)
               for target in item.targets if isinstance(target, ast.Name)]
    values = {m: _member_value(tree, m) for m in members}
    return {SHORT_NAMES.get(m) or _derived_name(values[m]): m for m in members}


def _types_file() -> Path | None:
    try:
        found = importlib.util.find_spec("executorch")  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return None
    for folder in (found.submodule_search_locations or []) if found else []:
        path = Path(folder).joinpath(*_TYPES_FILE)
        if path.is_file():
            return path
    return None


def _member_value(tree: ast.AST, member: str) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                any(isinstance(t, ast.Name) and t.id == member for t in node.targets):
            return str(node.value.value)
    return member.lower()


def _derived_name(value: str) -> str:
    for prefix in (f"{RECIPE_BACKEND}_", "pt2e_", "torchao_"):
        value = value.removeprefix(prefix)
    return value.replace("_", "-")


_VARIANT = "-per-tensor"


def recipe_help() -> str:
    """The names `--recipe` takes, for --help; a name's `-per-tensor` variant beside it as `(-per-tensor)`, since the
    help's column is about 22 characters wide in an 80-column terminal and cuts a longer word
    (`int8-static-per-tens…`)."""
    offered = list(available_recipes())
    folded = [f"{name} ({_VARIANT})" if f"{name}{_VARIANT}" in offered else name
              for name in offered if not (name.endswith(_VARIANT) and name.removesuffix(_VARIANT) in offered)]
    names = ", ".join(folded) or "none: ExecuTorch is not installed"
    factory = "FILE.py:FACTORY or module:FACTORY returning an ExportRecipe of executorch.export"  # FACTORY_FORM, short words
    return f"Export recipe(s) of ExecuTorch's export API ({names}; or {factory}); a list sweeps: one model per recipe."


def parse_recipes(text: str | None, where: str = "--recipe") -> tuple[RecipeSpec, ...]:
    """`int8-static` or `fp32,int8-static` or `recipes.py:make`: each recipe once, in the order given; an
    unknown name is a UsageError listing what this ExecuTorch offers (`where` names the option or plan key)."""
    if text is None:
        return ()
    words = [w.strip() for w in str(text).split(",")]
    if not all(words):
        raise UsageError(f"{where}: {text!r} has an empty recipe name; give NAME[,NAME...]")
    recipes = tuple(_parse_one(word, where) for word in words)
    labels = [r.label for r in recipes]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise UsageError(f"{where}: recipe {twice[0]!r} given twice")
    return recipes


def _parse_one(word: str, where: str) -> RecipeSpec:
    if ":" in word:
        try:
            spec = parse_model_spec(word)
        except ModelSpecError as exc:
            raise UsageError(f"{where}: recipe factory {word!r}: {str(exc).split(': ', 1)[-1]}") from None
        if spec.kind == "pte":
            raise UsageError(f"{where}: {word!r} is not a recipe; give {FACTORY_FORM}")
        return RecipeSpec(word, spec.factory or word, factory=spec)
    offered = available_recipes()
    if word not in offered:
        names = ", ".join(offered) or "none (ExecuTorch is not installed)"
        raise UsageError(f"{where}: unknown recipe {word!r}; this ExecuTorch offers {names} (or {FACTORY_FORM})")
    return RecipeSpec(word, word, member=offered[word])


def check_recipe_backend(backend: str, recipes: tuple[RecipeSpec, ...], where: str = "--backend") -> None:
    """A named recipe lowers to its own backend (XNNPACK's recipes to xnnpack): another backend beside it is a
    UsageError, never silently ignored. A factory's recipe lowers as it says; the backend then only names it."""
    named = [r.text for r in recipes if r.member is not None]
    if named and backend != RECIPE_BACKEND:
        raise UsageError(f"{where} {backend}: recipe {named[0]} lowers to {RECIPE_BACKEND} (ExecuTorch's "
                         f"{RECIPE_BACKEND} recipes); drop {where} or give a factory's own ExportRecipe")


def recipe_words(recipes: tuple[RecipeSpec, ...]) -> tuple[str, ...]:
    """The recipes as recorded in a job's settings (JobOptions.recipes): each as the user wrote it."""
    return tuple(r.text for r in recipes)


@dataclass(frozen=True)
class RecipeInfo:
    """What a recipe export recorded (`recipe.json` beside the program): the recipe, whether it quantized, and
    how it was calibrated. `calibration_batches` None: the recipe has no post-training calibration (fp32,
    dynamic or weight-only quantization by torchao); `calibration` says where the batches came from."""

    text: str  # as the user wrote it
    label: str
    name: str  # the ExportRecipe's own name (xnnpack_pt2e_int8_static_per_channel, or the factory's)
    quantized: bool
    calibration_batches: int | None = None
    calibration: str = ""  # "example inputs", "model" (CalibratedModel.calibration), "recipe" (its own)

    @classmethod
    def load(cls, path: Path) -> RecipeInfo:
        """recipe.json as `encode(info)` wrote it (a FieldError, a ValueError, names a key that is wrong)."""
        return decode(cls, json.loads(path.read_text()))

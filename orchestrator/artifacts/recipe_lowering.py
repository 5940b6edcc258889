"""Lower a model through ExecuTorch's export API with an export recipe (docs/how-to/quantized.md).

`executorch.export.export(model, [example_inputs], recipe, generate_etrecord=True)`: the recipe quantizes
(PT2E or torchao) and lowers. A static recipe calibrates on data: the model file's calibration batches
(artifacts/calibration.py) when it gives some, else its example inputs, one batch; a factory's recipe that
brings its own `calibration_inputs_fn` keeps it. The batches actually fed are counted, and recorded.

Imports torch and executorch (function level): called only when an export must happen.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.artifacts.host_reference import run_on_host
from orchestrator.artifacts.modelspec import call_factory, model_code
from orchestrator.artifacts.recipes import RECIPE_BACKEND, RecipeSpec, available_recipes
from orchestrator.artifacts.runtime_noise import without_partial_graph
from orchestrator.artifacts.xnnpack_patterns import skip_patterns_no_graph_can_match
from orchestrator.base.errors import ConfigurationFailed, ModelSpecError, UsageError, one_line


@dataclass(frozen=True)
class RecipeProgram:
    """What the recipe made: the program manager, and how it was quantized."""

    program: Any  # executorch's ExecutorchProgramManager
    session: Any  # the ExportSession (runs the program on the host)
    quantized: bool  # the recipe quantizes (its outputs are then compared with the fp32 eager model's)
    calibration_batches: int | None  # batches fed to PT2E calibration; None: the recipe does not calibrate
    name: str  # the recipe's own name (ExportRecipe.name), e.g. xnnpack_pt2e_int8_static_per_channel
    own_calibration: bool = False  # the recipe brought its own calibration_inputs_fn (a factory's)
    stage_ms: Mapping[str, float] = field(default_factory=dict)  # ExecuTorch's own time per pipeline stage
    calibration_s: float = 0.0  # time the model spent on the calibration batches (inside the quantize stage)


def lower_with_recipe(spec_text: str, recipe: RecipeSpec, model: Any, inputs: tuple[Any, ...],
                      calibration: Sequence[tuple[Any, ...]] | None) -> RecipeProgram:
    """Export `model` with `recipe`; an ExportError with the exporter's own reason in one line if it fails."""
    from executorch.export import export

    skip_patterns_no_graph_can_match()  # every recipe lowers to XNNPACK
    export_recipe = build_recipe(recipe)
    quantization = export_recipe.quantization_recipe
    own = quantization is not None and quantization.calibration_inputs_fn is not None
    export_recipe, fed, spent = _with_calibration(export_recipe, calibration or [inputs], recipe.text)
    quantized = quantization is not None and bool(quantization.quantizers or quantization.ao_quantization_configs)
    try:
        with _root_log_quiet(), without_partial_graph():  # the export API logs through the root logger ("Disabled
            # validating the partitioner"); torch.export prints the partial graph of a model it cannot trace
            session = export(model, [inputs], export_recipe=export_recipe, generate_etrecord=True)
        program = session.get_executorch_program_manager()
    except ModelSpecError:  # the recipe's own calibration raised: the user's code, not the exporter
        raise
    except Exception as exc:  # noqa: BLE001  (the exporter's reason, whatever it raised)
        raise ConfigurationFailed(f"exporting {spec_text!r} with recipe {recipe.label} failed: {type(exc).__name__}: "
                          f"{one_line(str(exc).strip().splitlines()[0] if str(exc).strip() else '')}") from None
    return RecipeProgram(program, session, quantized, len(fed) if fed is not None else None,
                         str(export_recipe.name or recipe.label), own, _stage_ms(session), sum(spent))


def _stage_ms(session: Any) -> dict[str, float]:
    """ExecuTorch's time per stage of the pipeline it ran (its artifacts' `duration_ms`), by stage type value."""
    out = {}
    for stage, artifact in session.get_stage_artifacts().items():
        ms = (getattr(artifact, "context", None) or {}).get("duration_ms")
        if isinstance(ms, (int, float)):
            out[str(getattr(stage, "value", stage))] = float(ms)
    return out


@contextlib.contextmanager
def _root_log_quiet() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def build_recipe(recipe: RecipeSpec) -> Any:
    """The `ExportRecipe` a recipe names: the installed ExecuTorch's recipe type, or what the factory returns."""
    from executorch.export import ExportRecipe

    if recipe.factory is not None:
        made = call_factory(recipe.factory)
        if not isinstance(made, ExportRecipe):
            raise ModelSpecError(f"recipe {recipe.text!r}: {recipe.factory.factory}() returned {type(made).__name__}, "
                                 "not an executorch.export.ExportRecipe")
        return made
    import executorch.backends.xnnpack.recipes  # noqa: F401  (registers the XNNPACK recipe provider)
    from executorch.backends.xnnpack.recipes.xnnpack_recipe_types import XNNPackRecipeType
    from executorch.export import recipe_registry

    registered = {t.name for t in recipe_registry.get_supported_recipes(RECIPE_BACKEND)}
    if recipe.member not in registered:  # named from the source, yet not registered: say what is
        offered = [name for name, member in available_recipes().items() if member in registered]
        raise UsageError(f"--recipe: {recipe.text!r} is not registered by this ExecuTorch's {RECIPE_BACKEND} provider; "
                         f"it offers {', '.join(offered)}")
    return ExportRecipe.get_recipe(XNNPackRecipeType[recipe.member or ""])


def _with_calibration(export_recipe: Any, batches: Sequence[tuple[Any, ...]],
                      recipe_text: str) -> tuple[Any, list[int] | None, list[float]]:
    """The recipe with a calibration that counts what it feeds (the model's batches unless the recipe brings its
    own), the counter (None when the recipe has no post-training calibration), and the seconds the model spent
    on each batch (between handing a batch out and being asked for the next)."""
    quantization = export_recipe.quantization_recipe
    spent: list[float] = []
    if quantization is None or not quantization.quantizers or quantization.is_qat:
        return export_recipe, None, spent
    fed: list[int] = []
    own = quantization.calibration_inputs_fn

    def counted() -> Iterator[Any]:
        if own is None:
            yield from _counted(batches, fed, spent)
            return
        with model_code(recipe_text, "its calibration_inputs_fn", kind="recipe"):  # the user's: raised as its error
            yield from _counted(own(), fed, spent)

    calibrated = dataclasses.replace(quantization, calibration_inputs_fn=counted)
    return dataclasses.replace(export_recipe, quantization_recipe=calibrated), fed, spent


def _counted(batches: Iterable[Any], fed: list[int], spent: list[float]) -> Iterator[Any]:
    """Each batch, counted in `fed`, and the seconds the model spent on it (until it asked for the next) in `spent`."""
    for batch in batches:
        fed.append(1)
        handed = time.perf_counter()
        yield batch
        spent.append(time.perf_counter() - handed)


def host_outputs(made: RecipeProgram, inputs: tuple[Any, ...], what: str) -> list[Any]:
    """The program's own outputs on this host (ExecuTorch's Python runtime): what a device must compute; an
    ExportError with the runtime's own reason when it cannot run it (`what` names the configuration)."""
    return run_on_host(lambda: list(made.session.run_method("forward", inputs)), what)

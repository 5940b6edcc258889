"""A recipe export's artifacts (docs/how-to/quantized.md, docs/reference/run-directory.md): what lowering.py writes for
`--recipe`, beside the usual program, ETRecord, inputs and numerics reference.

- `reference_outputs.etft`: what a device must compute. For a recipe that quantizes, the program's own
  outputs on this host (ExecuTorch's Python runtime), since the quantized program is meant to differ from
  the fp32 model; verification then still catches a device that computes something else. For fp32, the
  eager model's outputs, as for every other export.
- `eager_outputs.etft`: the fp32 eager model's outputs: what accuracy (SNR, max abs error, cosine, top-1
  agreement; results/accuracy.py) is measured against, per device.
- `eager_reference.npz`: the fp32 eager model's intermediate outputs (numerics_reference.py's format),
  for per-layer accuracy against the program's own (numerics/layer_accuracy.py).
- `recipe.json`: `RecipeInfo`: the recipe, whether it quantized, how many calibration batches and whence.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.artifacts.calibration import CalibratedModel, calibration_batches
from orchestrator.artifacts.export_entry import (
    EAGER_OUTPUTS_NAME,
    EAGER_REFERENCE_NAME,
    RECIPE_NAME,
    flatten_outputs,
    run_eager,
    save_program,
    write_numerics,
)
from orchestrator.artifacts.export_phases import OWN_PHASES, PhaseClock
from orchestrator.artifacts.modelspec import ModelSpec, check_factory_result
from orchestrator.artifacts.recipe_lowering import host_outputs, lower_with_recipe
from orchestrator.artifacts.recipes import RecipeInfo, RecipeSpec
from orchestrator.base.cache import sha256_file, write_json_atomic
from orchestrator.base.codec import encode


def export_recipe_into(spec: ModelSpec, result: Any, recipe: RecipeSpec, out: Path,
                       log: Callable[[str], None]) -> dict[str, Any]:
    """Lower the factory's `result` with `recipe` into `out`, each phase timed (export_phases.py); returns notes for
    meta.json. Whatever fails past the user's own code is an ExportError naming the phase: the configuration's."""
    # numpy: every command imports this module (through lowering.py), `etfarm --help` included
    from orchestrator.artifacts.tensorfile import write_tensors

    given = None
    if isinstance(result, CalibratedModel):
        model, inputs = check_factory_result(spec, (result.module, result.example_inputs))
        given = calibration_batches(spec.text, result, inputs) or None
    else:
        model, inputs = check_factory_result(spec, result)
    what = f"{spec.text!r} with recipe {recipe.label}"
    clock = PhaseClock(what)
    with clock.phase("eager run"):
        eager = run_eager(spec, model, inputs)
    made = lower_with_recipe(spec.text, recipe, model, inputs, given)
    clock.add_stages(made.stage_ms, made.calibration_s)
    reference = eager  # fp32: the eager model's outputs; a quantized program's own, run on this host
    if made.quantized:
        with clock.phase("host reference"):
            reference = host_outputs(made, inputs, what)
    with clock.phase("ETRecord"):
        save_program(made.program, inputs, reference, out)
        write_tensors(out / EAGER_OUTPUTS_NAME, [t.detach().contiguous().numpy() for t in flatten_outputs(eager)])
    with clock.phase("per-layer replay"):
        numerics_error = write_numerics(out)
        eager_error = shared_eager_reference(spec, model, inputs, out / EAGER_REFERENCE_NAME)
    info = RecipeInfo(recipe.text, recipe.label, made.name, made.quantized, made.calibration_batches,
                      _calibration_source(made.calibration_batches, given, made.own_calibration))
    write_json_atomic(out / RECIPE_NAME, encode(info))
    if info.calibration == "example inputs":
        log(f"{spec.name}: recipe {recipe.label} calibrated on the example inputs alone (1 batch: a weak calibration; "
            "return a CalibratedModel with calibration batches)")
    phases = clock.result()
    lower_s = sum(s for name, s in phases.seconds if name not in OWN_PHASES and name != "ETRecord")
    return {"kind": "module", "numerics_reference_error": numerics_error, "eager_reference_error": eager_error,
            "recipe": encode(info), "lower_s": round(lower_s, 3),  # executorch.export.export alone
            "phases": phases.to_dict()}


def _calibration_source(batches: int | None, given: list[Any] | None, own: bool) -> str:
    if batches is None:
        return ""
    return "recipe" if own else "model" if given else "example inputs"


# The fp32 eager model's intermediate outputs are the same for every recipe of a sweep (the factory is
# deterministic by contract; the recipes of one model are exported one after another): captured and replayed
# once per model source and factory, kept in memory for the next recipe (the last model's only).
_last_eager_reference: list[tuple[tuple[str, str], bytes]] = []


def shared_eager_reference(spec: ModelSpec, model: Any, inputs: tuple[Any, ...], path: Path) -> str | None:
    """The eager model's intermediate outputs at `path` (once per spec in a row); why not (None: written).
    Optional: accuracy per model still holds without them."""
    from orchestrator.artifacts.numerics_reference import write_eager_reference  # numpy: as write_tensors above

    key = (spec.text, sha256_file(spec.source))
    if _last_eager_reference and _last_eager_reference[0][0] == key:
        path.write_bytes(_last_eager_reference[0][1])
        return None
    try:
        write_eager_reference(model, inputs, path)
    except Exception as exc:  # noqa: BLE001  (a model torch.export cannot replay still profiles)
        path.unlink(missing_ok=True)
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    _last_eager_reference[:] = [(key, path.read_bytes())]
    return None

"""A cache entry of an export: its files' names, and the steps that write them, shared by the plain export
(lowering.py) and the recipe export (recipe_export.py): the eager model's outputs, the program with its
ETRecord, inputs and reference outputs, and the AOT intermediate outputs. torch and executorch are imported
inside the functions that need them (every command imports lowering.py, `etfarm --help` included).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

from orchestrator.artifacts.modelspec import ModelSpec, model_code
from orchestrator.base.errors import ExportError

PTE_NAME = "model.pte"
ETRECORD_NAME = "etrecord.bin"
INPUTS_NAME = "inputs.etft"
REFERENCE_NAME = "reference_outputs.etft"
META_NAME = "meta.json"
NUMERICS_REFERENCE_NAME = "numerics_reference.npz"
LLM_REFERENCE_NAME = "llm_reference.json"  # an LLM's eager greedy tokens (llm.LlmReference)
RECIPE_NAME = "recipe.json"  # a recipe export: which recipe, quantized or not, calibration batches (recipe_export.py)
EAGER_OUTPUTS_NAME = "eager_outputs.etft"  # a recipe export: the fp32 eager model's outputs (accuracy)
EAGER_REFERENCE_NAME = "eager_reference.npz"  # a recipe export: the fp32 eager model's intermediate outputs


def run_eager(spec: ModelSpec, model: Any, inputs: tuple[Any, ...]) -> Any:
    """The eager model's outputs on its example inputs (a ModelSpecError naming the spec if it raises)."""
    import torch

    quiet_export_noise()  # after importing torch: its logging setup resets levels on import
    with model_code(spec.text, "running the model on its example inputs"), torch.no_grad():
        return model(*inputs)


def save_program(program: Any, inputs: tuple[Any, ...], reference: Any, out: Path) -> None:
    """The program, its ETRecord (with the inputs as representative inputs), the inputs and the reference outputs."""
    from orchestrator.artifacts.tensorfile import write_tensors

    program.save(str(out / PTE_NAME))
    etrecord = program.get_etrecord()
    etrecord.update_representative_inputs(inputs)
    etrecord.save(str(out / ETRECORD_NAME))
    write_tensors(out / INPUTS_NAME, [t.detach().contiguous().numpy() for t in inputs])
    write_tensors(out / REFERENCE_NAME, [t.detach().contiguous().numpy() for t in flatten_outputs(reference)])


def write_numerics(out: Path) -> str | None:
    """The AOT intermediate outputs of the ETRecord in `out`; returns why they could not be made (None: they were)."""
    try:  # optional: a model Inspector cannot replay still profiles; numerics then compares devices only
        # numpy: every command imports this module, `etfarm --help` included
        from orchestrator.artifacts.numerics_reference import write_numerics_reference

        write_numerics_reference(out / ETRECORD_NAME, out / NUMERICS_REFERENCE_NAME)
    except Exception as exc:  # noqa: BLE001  (any failure of the replay is reported, not fatal)
        (out / NUMERICS_REFERENCE_NAME).unlink(missing_ok=True)
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def flatten_outputs(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten_outputs(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten_outputs(item)]
    raise ExportError(f"model output of type {type(value).__name__} is not supported; return tensors (or tuples of them)")


def quiet_export_noise() -> None:
    """torch/torchao/executorch log and warn a lot on import and export; keep the CLI readable."""
    for name in ("torch", "torchao", "executorch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")

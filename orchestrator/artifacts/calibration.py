"""Calibration data a model file may give its static quantization (docs/how-to/quantized.md).

A factory returns `(module, example_inputs)`; to calibrate a static recipe (`--recipe int8-static`) on more
than the example inputs, it returns a `CalibratedModel` instead:

    from orchestrator.artifacts.calibration import CalibratedModel

    def build():
        torch.manual_seed(0)
        model = Net().eval()
        return CalibratedModel(model, (torch.randn(1, 3, 64, 64),),
                               calibration=[(torch.randn(1, 3, 64, 64),) for _ in range(16)])

Each calibration batch is a tuple of tensors shaped like the example inputs. Without batches, a static
recipe calibrates on the example inputs alone: one batch, a weak calibration, and the report says so. The
number of batches used is recorded with the export. Torch-free (the module imports nothing heavy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.artifacts.modelspec import model_code
from orchestrator.base.errors import ModelSpecError

MAX_CALIBRATION_BATCHES = 100_000  # beyond it a generator was meant, not a sequence


@dataclass(frozen=True)
class CalibratedModel:
    """A model, its example inputs (traced and verified, as a factory's pair), and its calibration batches."""

    module: Any
    example_inputs: Any
    calibration: Sequence[Any] = ()


def calibration_batches(spec_text: str, model: CalibratedModel, example: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The model's calibration batches, each a tuple of tensors shaped as `example`; a ModelSpecError naming the
    spec and the batch otherwise."""
    with model_code(spec_text, "its CalibratedModel.calibration"):  # a sequence of the user's: len and items run its code
        return _checked_batches(spec_text, model.calibration, example)


def _checked_batches(spec_text: str, batches: Any, example: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    import torch

    if isinstance(batches, (str, bytes)) or not isinstance(batches, Sequence) or len(batches) > MAX_CALIBRATION_BATCHES:
        raise ModelSpecError(f"model spec {spec_text!r}: CalibratedModel.calibration must be a sequence of input "
                             f"tuples (at most {MAX_CALIBRATION_BATCHES}), got {type(batches).__name__}")
    out = []
    for index, batch in enumerate(batches):
        batch = (batch,) if isinstance(batch, torch.Tensor) else batch
        if not isinstance(batch, (tuple, list)) or len(batch) != len(example) or not all(
                isinstance(t, torch.Tensor) and t.shape == e.shape and t.dtype == e.dtype
                for t, e in zip(batch, example, strict=False)):
            raise ModelSpecError(f"model spec {spec_text!r}: calibration batch {index} is not a tuple of tensors "
                                 "shaped like the example inputs")
        out.append(tuple(batch))
    return out

"""Which layer loses accuracy when a model is quantized (docs/how-to/quantized.md: accuracy per layer).

For a model lowered with an export recipe that quantizes, every layer's output in the program's own graph
(the ETRecord's graph, quantize and dequantize steps included, run on the reference inputs at export:
`numerics_reference.npz`, the graph Inspector's numeric gap uses as the program's reference) is compared with
the fp32 eager model's output at the same layer (`eager_reference.npz`), the two graphs joined by layer
(profiles/op_identity.py: module path, op kind, occurrence): SNR in dB, max abs error, cosine. Why the graph and
not the device: XNNPACK runs a whole delegated graph as one call and its runtime logs only the call's output,
so a device shows no layer inside it; what each device's outputs lose is its model-level accuracy
(results/accuracy.py), and `etfarm numerics` compares a device's logged outputs with this same graph.

SNR falls along the graph as errors add up; what a layer itself loses is how much relative error (noise power
over signal power, 10^(-SNR/10)) it adds to the layer before it in the graph's order: the layer that loses
most is the one adding the most. numpy only (no torch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.artifacts.modelspec import LOADED_PREFIX
from orchestrator.base.errors import DataError
from orchestrator.numerics.mapping import DebugHandle, unwrap
from orchestrator.numerics.sources import AotReference, load_reference
from orchestrator.profiles.op_identity import OpIdentity, graph_op, numbered
from orchestrator.results.accuracy import cosine, snr_db

_LOADED_AS = re.compile(rf"^{LOADED_PREFIX}\d+\.")


@dataclass(frozen=True)
class LayerLoss:
    """One layer of a quantized program against the fp32 eager model."""

    key: OpIdentity
    module_type: str  # e.g. torch.nn.modules.conv.Conv2d ('' when unknown)
    snr_db: float | None  # the program graph's output here vs eager (None: identical)
    max_abs_error: float
    cosine: float | None
    added_error: float  # relative error power added to the previous compared layer's (can be < 0: a ReLU clips)


@dataclass(frozen=True)
class LayerAccuracy:
    """A quantized model's layers, in graph order; or why they could not be compared."""

    model: str
    layers: tuple[LayerLoss, ...] = ()
    error: str | None = None

    @property
    def worst(self) -> LayerLoss | None:
        """The layer that adds the most relative error."""
        return max(self.layers, key=lambda layer: layer.added_error, default=None)


def layer_accuracy(model: str, program: str | Path | None, eager: str | Path | None) -> LayerAccuracy:
    """The layers of `model`'s program graph (its numerics reference) against the fp32 eager model's."""
    if not program or not eager or not Path(program).is_file() or not Path(eager).is_file():
        return LayerAccuracy(model, error="no intermediate outputs of the program or of the fp32 eager model "
                                          "(exported before recipes had them, or the replay failed at export)")
    try:
        program_ref, eager_ref = load_reference(program), load_reference(eager)
    except DataError as exc:
        return LayerAccuracy(model, error=str(exc))
    program_keys = _keys(program_ref)
    eager_values = {key: (program_value, _module_type(eager_ref, handle))
                    for handle, key in _keys(eager_ref).items() if (program_value := _tensor(eager_ref.outputs[handle]))
                    is not None}
    layers, previous = [], 0.0
    for handle, key in program_keys.items():
        value, (reference, module_type) = _tensor(program_ref.outputs[handle]), eager_values.get(key, (None, ""))
        if value is None or reference is None or value.shape != reference.shape:
            continue
        ref, got = reference.astype(np.float64).ravel(), value.astype(np.float64).ravel()
        snr = snr_db(ref, got)
        error = 0.0 if snr is None else 10.0 ** (-snr / 10.0)
        layers.append(LayerLoss(key, module_type, snr, float(np.max(np.abs(got - ref))) if ref.size else 0.0,
                                cosine(ref, got), error - previous))
        previous = error
    if not layers:
        return LayerAccuracy(model, error="no layer of the program's graph matches one of the fp32 eager model's")
    return LayerAccuracy(model, tuple(layers))


def _keys(reference: AotReference) -> dict[DebugHandle, OpIdentity]:
    """Each debug handle of a graph that is a layer op, with its key, in graph order."""
    handles = list(reference.outputs)
    ops = []
    for handle in handles:
        names = reference.op_names.get(handle, [])
        ops.append(graph_op(names, [_innermost(reference, name) for name in names]))
    return {handle: key for handle, key in zip(handles, numbered(ops), strict=True) if key is not None}


def _innermost(reference: AotReference, op: str) -> str:
    stack = reference.module_stacks.get(op) or ()
    return stack[-1][0] if stack else ""


def _module_type(reference: AotReference, handle: DebugHandle) -> str:
    for name in reference.op_names.get(handle, []):
        stack = reference.module_stacks.get(name) or ()
        if stack:
            return _LOADED_AS.sub("", stack[-1][1])  # the model file's own module name, not etfarm's import name
    return ""


def _tensor(value: Any) -> np.ndarray | None:
    """A floating tensor, from a value or a list holding one."""
    value = unwrap(value)
    if isinstance(value, (list, tuple)):
        value = value[0] if len(value) == 1 else None
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return value
    return None

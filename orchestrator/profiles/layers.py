"""A layer of the user's model, the one key that joins rows across export recipes, devices and graphs.

The same layer is measured under names that differ: XNNPACK names a kernel by the precision and the CPU
(`Convolution (NHWC, F32) IGEMM #1` on the host, `(NHWC, PF32)` on an aarch64 board, `(NHWC, QC8)` in an
int8 program), and the fp32 eager graph and a quantized program's graph number their nodes apart
(`conv2d_1` here is `conv2d_2` there, between quantize steps). What stays is where an op is in the user's
model: its module path, its kind of op, and which occurrence of that kind in that module it is.

`layer_keys` is the one home of that key (README "Quantized models": per-layer speed-ups and per-layer
accuracy join through it). Issue 28's op identity (every row keyed by module path + ATen op + occurrence
from the debug handles) is meant to replace it here, in one place. Torch-free.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.profiles.analysis_core import OP_TYPES_SEPARATOR
from orchestrator.profiles.kernel_align import operator_family
from orchestrator.profiles.stat_rows import StatRow

# Ops that only move data between precisions: in a quantized graph they surround every layer; never a layer.
_QUANTIZATION = re.compile(r"^(quantize|dequantize|choose_qparams)")
_NUMBERED = re.compile(r"_\d+$")


@dataclass(frozen=True, order=True)
class LayerKey:
    """Where an op is in the user's model: module path ('' for the model itself), op kind, occurrence (0, 1, ...)."""

    module_path: str
    op: str
    occurrence: int = 0

    @property
    def layer(self) -> str:
        """The module, as people read it."""
        return self.module_path or "(model)"

    def describe(self) -> str:
        return f"{self.layer} {self.op}" + (f" #{self.occurrence + 1}" if self.occurrence else "")


def layer_keys(ops: Iterable[tuple[str, str] | None]) -> list[LayerKey | None]:
    """Each (module path, op kind) of a graph or a profile, in execution order, keyed with its occurrence; None
    stays None (an op that belongs to no layer)."""
    seen: Counter[tuple[str, str]] = Counter()
    keys: list[LayerKey | None] = []
    for op in ops:
        if op is None:
            keys.append(None)
            continue
        keys.append(LayerKey(op[0], op[1], seen[op]))
        seen[op] += 1
    return keys


def graph_op(node_names: Sequence[str], module_paths: Sequence[str]) -> tuple[str, str] | None:
    """A graph's debug handle as a layer op: its first node that is not a quantize step (`relu` of `relu,
    quantize_per_tensor_1, dequantize_per_tensor_1`), by kind (the node's name without its number) and module;
    None for a handle of quantize steps only (a weight's dequantize, an input's quantize)."""
    for name, module in zip(node_names, module_paths, strict=False):
        if not _QUANTIZATION.match(name):
            return module, _NUMBERED.sub("", name)
    return None


def row_op(row: StatRow) -> tuple[str, str] | None:
    """A profile row as a layer op: an XNNPACK kernel by its operator family (`Convolution`), an operator by its
    first op type; None for what is no layer of the model (framework events, a delegate call as a whole, a
    kernel the kernel map could not name)."""
    if row.kernel_mapping:  # a delegate's kernel
        return (row.module_path or "", operator_family(row.event_name)) if row.kernel_mapped else None
    if row.event_name == "DELEGATE_CALL" or not row.op_types:
        return None
    return row.module_path or "", row.op_types.split(OP_TYPES_SEPARATOR)[0]

"""Which layer of the user's model an event is: the ONE key that joins an op across devices, runs, sides, nights,
export recipes and graphs.

A kernel's name is no identity: XNNPACK names one convolution `Convolution (NHWC, F32) IGEMM #2` on
x86 and `Convolution (NHWC, PF32) IGEMM #2` on aarch64 (it picks microkernels by CPU features, so two
phones differ too; an int8 program says `QC8`), and a program with one more layer renumbers every
`#k` after it. What stays is the edge node an event came from (its debug handle: the ETRecord for an
operator, the XNNPACK serialized graph for a kernel, profiles/kernel_map.py), and of that node what the
user wrote: its module path and ATen op. An `OpIdentity` is (module path, op, occurrence): the
occurrence counts the events of one block with the same module and op, in execution order, so a node
that yields several kernels, or a module that runs one op twice, keeps its events apart.

Its `basis` says how much it knows, strongest first:

- `model`: from the model (debug handles -> edge nodes): an operator, or a kernel the kernel map named;
- `delegate`: only the delegate knows: a kernel the map could not name is keyed by its XNNPACK operator
  family (`Convolution`, the same on every CPU) and occurrence, a delegate call by its backend;
- `event`: no ETRecord, or a stats.csv written before identities: derived from the event's name (a
  kernel's family, the `#k` dropped) and, where the old file has them, its module path and op types;
- `framework`: the runtime's own events (Method::execute, OPERATOR_CALL), never an op.

The kernel name stays a per-device label. Torch-free and numpy-free: stats.csv readers, the report,
verdicts and numerics (graph nodes keyed with `graph_op`) use it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.profiles.kernel_align import operator_family
from orchestrator.profiles.kernel_attribution import PLUMBING, ROLE_RAN
from orchestrator.profiles.source import OP_TYPES_SEPARATOR, module_path, short_op_types

if TYPE_CHECKING:
    from orchestrator.profiles.etdump_events import EventInfo
    from orchestrator.profiles.etrecord import EventLink
    from orchestrator.profiles.kernel_map import KernelLink

MODEL, DELEGATE, EVENT, FRAMEWORK = "model", "delegate", "event", "framework"
BASES = (MODEL, DELEGATE, EVENT, FRAMEWORK)
# The one list of framework events: the runtime's own bookkeeping, each a method-level measure.
FRAMEWORK_EVENTS = {"Method::execute": "execute", "Method::init": "init", "Program::load_method": "load_method"}
HIDDEN_WHEN_PRINTING = frozenset({"OPERATOR_CALL"})  # as Inspector: it is op + dispatch overhead, not an op
FRAMEWORK_NAMES = frozenset({*FRAMEWORK_EVENTS, *HIDDEN_WHEN_PRINTING})  # never an op
DELEGATE_CALL = "DELEGATE_CALL"
HANDLES_SEPARATOR = ";"
_INSTANCE = re.compile(r"\s*#\d+$")
# Graph node names (numerics' AOT graphs): ops that only move data between precisions, and the node number.
_QUANTIZATION = re.compile(r"^(quantize|dequantize|choose_qparams)")
_NUMBERED = re.compile(r"_\d+$")

Base = tuple[str, str, str, tuple[int, ...]]  # (module path, op, basis, debug handles) before numbering


@dataclass(frozen=True, order=True)
class OpIdentity:
    """An op as the user's model knows it. Equal identities are the same op, whichever device, run or program
    measured it; `basis` and `debug_handles` say where it came from and take no part in equality."""

    module_path: str  # '' for the model's own code
    op: str  # the ATen op (`aten.convolution.default`); else an XNNPACK family, a backend, an event name
    occurrence: int = 0  # among the block's events with the same module and op, in execution order
    basis: str = field(default=MODEL, compare=False)
    debug_handles: tuple[int, ...] = field(default=(), compare=False)

    @property
    def layer(self) -> str:
        """The module, as people read it."""
        return self.module_path or "(model)"

    @property
    def op_name(self) -> str:
        """The op as people say it: `convolution` for `aten.convolution.default`."""
        return (short_op_types(self.op) or [self.op])[0]

    @property
    def label(self) -> str:
        """`features.3 convolution`, `features.0 convolution #2` for a second one; an event name without a model."""
        if self.basis in (EVENT, FRAMEWORK) and not self.module_path:
            core = self.op_name
        elif self.basis == DELEGATE:  # a delegate call, or a kernel the map could not name
            core = " ".join(x for x in (self.module_path, self.op_name, "(delegate)") if x)
        else:
            core = f"{self.layer} {self.op_name}"
        return core + (f" #{self.occurrence + 1}" if self.occurrence else "")

    @property
    def is_op(self) -> bool:
        """An op of the model (or of its delegate), not the runtime's own bookkeeping."""
        return self.basis != FRAMEWORK


def event_group(name: str) -> str:
    """An event's name without its instance suffix: `Convolution (NHWC, F32) IGEMM #2` -> `... IGEMM`."""
    return _INSTANCE.sub("", name)


def numbered(bases: Iterable[Base | None]) -> list[OpIdentity | None]:
    """Each (module, op, basis, handles) of a block or graph, in execution order, with its occurrence; None stays
    None (an op that belongs to no layer)."""
    seen: Counter[tuple[str, str]] = Counter()
    out: list[OpIdentity | None] = []
    for base in bases:
        if base is None:
            out.append(None)
            continue
        module, op, basis, handles = base
        out.append(OpIdentity(module, op, seen[(module, op)], basis, handles))
        seen[(module, op)] += 1
    return out


def block_identities(events: Sequence[EventInfo], links: Sequence[EventLink] | None = None,
                     kernels: Sequence[KernelLink | None] | None = None) -> tuple[OpIdentity, ...]:
    """The identity of every event of one block (Inspector's order), from what is known of it: the ETRecord's
    `links` (None without one) and the kernel map's `kernels` (None without a .pte)."""
    bases = [_base(event, links[i] if links is not None else None, kernels[i] if kernels is not None else None)
             for i, event in enumerate(events)]
    return tuple(i for i in numbered(bases) if i is not None)


def derived_identities(events: Sequence[tuple[str, bool, str, str, str]]) -> tuple[OpIdentity, ...]:
    """Identities of a stats.csv's rows written before identities existed, one block in execution order: per
    row (event name, delegated, module path, op types, kernel mapping). A linked operator keeps its module and
    ATen op (basis `model`, as a new file has it); a kernel gets its module and XNNPACK family (basis `event`:
    the old file lacks the ATen op its kernel ran), any other event its name."""
    bases: list[Base | None] = []
    for name, delegated, module, op_types, mapping in events:
        if name in FRAMEWORK_NAMES:
            bases.append(("", name, FRAMEWORK, ()))
            continue
        op = model_op(op_types.split(OP_TYPES_SEPARATOR)) if op_types and not mapping and name != DELEGATE_CALL else ""
        if op:  # an operator linked to the ETRecord: what a new file says of it
            bases.append((module, op, MODEL, ()))
            continue
        op = operator_family(name) if delegated and name != DELEGATE_CALL else event_group(name)
        bases.append((module if mapping == "mapped" else "", op, EVENT, ()))
    return tuple(i for i in numbered(bases) if i is not None)


def model_op(ops: Sequence[str]) -> str:
    """The op an event or node stands for: the first that is not quantization around it ('' when none)."""
    real = [op for op in ops if op and not any(p in op for p in PLUMBING)]
    return (real or [op for op in ops if op] or [""])[0]


def graph_op(node_names: Sequence[str], module_paths: Sequence[str]) -> Base | None:
    """A graph's debug handle as a layer op: its first node that is not a quantize step (`relu` of `relu,
    quantize_per_tensor_1, dequantize_per_tensor_1`), by kind (the node's name without its number) and module;
    None for a handle of quantize steps only (a weight's dequantize, an input's quantize)."""
    for name, module in zip(node_names, module_paths, strict=False):
        if not _QUANTIZATION.match(name):
            return module, _NUMBERED.sub("", name), MODEL, ()
    return None


def _base(event: EventInfo, link: EventLink | None, kernel: KernelLink | None) -> Base:
    if event.name in FRAMEWORK_NAMES:
        return "", event.name, FRAMEWORK, ()
    if bool(event.is_delegated_op) and isinstance(event.delegate_debug_identifier, str):  # a delegate's kernel
        if kernel is not None and kernel.mapped:
            # The ATen op of the node it ran; a kernel the lowering inserted (a layout transpose serving a
            # convolution) ran none: its own family, in the module it serves.
            ran = [n for n in kernel.nodes if n.role == ROLE_RAN]
            op = model_op([n.op for n in ran]) or operator_family(event.name)
            return kernel.module_path, op, MODEL, tuple(dict.fromkeys(n.debug_handle for n in ran or kernel.nodes))
        return "", operator_family(event.name), DELEGATE if link is not None else EVENT, ()
    if link is None:
        return _by_name(event.name, bool(event.is_delegated_op))
    handles = _handles(link.debug_handles)
    if event.name == DELEGATE_CALL:
        return module_path(link.module_hierarchy), link.delegate_backend_name or DELEGATE_CALL, DELEGATE, handles
    op = model_op(link.op_types)
    if not op:
        return _by_name(event.name, bool(event.is_delegated_op))
    return module_path(link.module_hierarchy), op, MODEL, handles


def _by_name(name: str, delegated: bool) -> Base:
    if name in FRAMEWORK_NAMES:
        return "", name, FRAMEWORK, ()
    return "", operator_family(name) if delegated and name != DELEGATE_CALL else event_group(name), EVENT, ()


def _handles(value: int | tuple[int, ...] | None) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    return tuple(h for h in value or () if isinstance(h, int))


def handles_text(handles: Sequence[int]) -> str:
    return HANDLES_SEPARATOR.join(str(h) for h in handles)


def parse_handles(text: str | None) -> tuple[int, ...]:
    return tuple(int(h) for h in (text or "").split(HANDLES_SEPARATOR) if h.strip().isdigit())

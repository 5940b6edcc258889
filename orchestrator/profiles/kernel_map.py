"""Name every XNNPACK kernel of an ETDump in the user's model: its node(s), module path and source line.

ExecuTorch's Inspector treats a delegate call as one operator: the kernel events inside an
XNNPACK delegate (`Convolution (NHWC, F32) IGEMM #2`) carry no debug handle, and XNNPACK's
`delegate_map` in the ETRecord is empty. The link is made in four steps, without torch:

1. the kernel event's instruction id -> the `DelegateCall` of the .pte and its payload
   (pte_program; the ETRecord does not hold the payload, so the .pte is required);
2. the payload -> the serialized XNodes, each with the debug handle of its edge node
   (xnnpack_graph);
3. the delegate's kernel events, in runtime order -> the XNodes they ran (kernel_align);
   XNodes that ran no kernel were fused by XNNPACK into a neighbour (a clamp into the
   producer, a zero pad into the consuming convolution) and are credited to it;
4. debug handles -> the ETRecord's edge nodes (etrecord), with their nn_module_stack and
   stack trace; handles of the delegate that no XNode carries were folded by the lowering
   (ReLU or batch norm into the convolution, a weight's dequantize) and are credited, along
   the edge graph's data flow (edge_flow), to the kernel of the node they were folded into.

A kernel that cannot be linked keeps a `reason` (and the analysis keeps "delegate over ...").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.edge_flow import EdgeFlow, load_edge_flow
from orchestrator.profiles.edge_flow import clear_cache as clear_edge_flows
from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.etrecord import FORWARD, ETRecordInfo, innermost_module, load_etrecord
from orchestrator.profiles.file_memo import FileMemo, file_key
from orchestrator.profiles.kernel_align import ALWAYS_RUN, AlignmentTooLarge, align
from orchestrator.profiles.kernel_attribution import PLUMBING, ROLE_FUSED, ROLE_SERVES, Attribution, attribute
from orchestrator.profiles.pte_program import DelegateCall, read_delegate_calls
from orchestrator.profiles.source import deepest_module, source_line
from orchestrator.profiles.xnnpack_graph import INSERTED_HANDLE, XnnGraph, is_xnnpack_backend, parse_xnnpack_payload

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class KernelNode:
    """An edge-graph op behind a kernel."""

    debug_handle: int
    name: str  # the edge node's name, as Inspector's op graph names it (e.g. `aten_convolution_default_`)
    op: str  # e.g. `aten.convolution.default`
    module_path: str  # the op's innermost module ('' for the model itself)
    # "ran": the node the kernel was serialized from; "fused": folded into the kernel by the lowering or
    # by XNNPACK; "serves": the kernel was inserted by the lowering (a layout transpose) for this node.
    role: str


@dataclass(frozen=True)
class KernelLink:
    """Where one kernel event of a delegate comes from."""

    event_name: str
    instruction_id: int
    operator_index: int  # position of the kernel among its delegate's kernels (runtime order)
    xnodes: tuple[int, ...] = ()  # serialized XNodes it ran: the matched one, then those fused into it
    nodes: tuple[KernelNode, ...] = ()
    module_path: str = ""  # deepest module holding every op the kernel ran ('' also for the model itself)
    source_line: str = ""  # `model.py:26`: the user's line that made the (first) op
    covers: tuple[str, ...] = ()  # innermost module of every node, once each, in order
    note: str = ""  # how it maps when not one-to-one: fused nodes, or inserted by the lowering
    reason: str = ""  # why it is not mapped ('' when it is)
    foreign: bool = False  # not mapped because the ETDump, the .pte and the ETRecord are not of one program

    @property
    def mapped(self) -> bool:
        return not self.reason

    @property
    def op_types(self) -> tuple[str, ...]:
        return tuple(n.op for n in self.nodes if n.role != ROLE_SERVES)


@dataclass(frozen=True, eq=False)
class KernelProgram:
    """A .pte with its ETRecord, ready to name the kernels of any ETDump of that program."""

    pte: str
    record: ETRecordInfo
    flow: EdgeFlow
    method: str
    calls: dict[int, DelegateCall]  # instruction id -> delegate call (chain 0 of `method`)
    _graphs: dict[int, XnnGraph | str] = field(default_factory=dict)  # parsed payload, or why not
    _links: dict[tuple[int, tuple[str, ...]], tuple[KernelLink, ...]] = field(default_factory=dict)

    def link_block(self, events: Sequence[EventInfo]) -> tuple[KernelLink | None, ...]:
        """Per event of an event block (Inspector's order): its KernelLink for a delegate's kernel
        event, None for anything else (operators, DELEGATE_CALL, framework events)."""
        names: dict[int, list[str]] = {}
        for event in events:
            if event.is_delegated_op and event.has_perf and isinstance(event.delegate_debug_identifier, str):
                names.setdefault(event.instruction_id, []).append(event.name)
        by_event: dict[tuple[int, str], KernelLink] = {}
        for instruction_id, kernel_names in names.items():
            for link in self.kernels(instruction_id, kernel_names):
                by_event.setdefault((instruction_id, link.event_name), link)
        return tuple(by_event.get((e.instruction_id, e.name)) if e.is_delegated_op else None for e in events)

    def kernels(self, instruction_id: int, event_names: Sequence[str]) -> tuple[KernelLink, ...]:
        """One KernelLink per kernel event of one execution of a delegate call, in runtime order."""
        key = (instruction_id, tuple(event_names))
        found = self._links.get(key)
        if found is None:
            found = self._links[key] = self._kernels(instruction_id, key[1])
        return found

    def foreign(self, instruction_id: int) -> str | None:
        """Why the .pte's delegate call at `instruction_id` and the ETRecord cannot be of one program (no delegate
        there, no debug handles for it, or its nodes carry handles the ETRecord does not give it); None if they may be."""
        graph = self._graph(instruction_id)
        if isinstance(graph, str):
            return graph if instruction_id not in self.calls else None  # no delegate there: another program's ETDump
        handles = _delegate_handles(self.record, instruction_id)
        if not handles:
            return f"the ETRecord has no debug handles for delegate instruction {instruction_id} (another program?)"
        foreign = sorted({n.debug_handle for n in graph.nodes} - set(handles) - {INSERTED_HANDLE})
        if foreign:
            return (f"the .pte and the ETRecord disagree: the delegate's nodes carry debug handles {foreign[:5]} "
                    f"that the ETRecord does not give instruction {instruction_id}")
        return None

    def _kernels(self, instruction_id: int, names: tuple[str, ...]) -> tuple[KernelLink, ...]:
        why = self.foreign(instruction_id)
        if why is not None:
            return tuple(KernelLink(n, instruction_id, i, reason=why, foreign=True) for i, n in enumerate(names))
        graph = self._graph(instruction_id)
        if isinstance(graph, str):  # a delegate this mapping cannot read (another backend, a damaged payload)
            return tuple(KernelLink(n, instruction_id, i, reason=graph) for i, n in enumerate(names))
        handles = _delegate_handles(self.record, instruction_id)
        try:
            alignment = align(names, [n.kind for n in graph.nodes])
        except AlignmentTooLarge as exc:
            why = f"delegate too large to align ({exc})"
            return tuple(KernelLink(n, instruction_id, i, reason=why) for i, n in enumerate(names))
        lost = [graph.nodes[j] for j, i in enumerate(alignment.operator_of) if i is None and graph.nodes[j].kind in ALWAYS_RUN]
        if lost:
            why = (f"the kernels do not fit the .pte's delegate at instruction {instruction_id}: its node {lost[0].index} "
                   f"({lost[0].kind}) ran none; an ETDump of another program, or an XNNPACK rewrite this mapping "
                   f"does not know")
            return tuple(KernelLink(n, instruction_id, i, reason=why, foreign=True) for i, n in enumerate(names))
        found = attribute(graph, alignment, handles, self.flow, self.record.nodes_by_handle)
        return tuple(self._link(instruction_id, i, name, found) for i, name in enumerate(names))

    def _graph(self, instruction_id: int) -> XnnGraph | str:
        if instruction_id not in self._graphs:
            call = self.calls.get(instruction_id)
            if call is None:
                found: XnnGraph | str = f"the .pte has no delegate call at instruction {instruction_id} of {self.method!r}"
            elif not is_xnnpack_backend(call.backend):
                found = f"{call.backend} kernels are not mapped (only XNNPACK's serialized graph is read)"
            else:
                try:
                    found = parse_xnnpack_payload(call.payload, f"{self.pte} delegate {call.delegate_index}")
                except AnalysisError as exc:
                    found = str(exc)
            self._graphs[instruction_id] = found
        return self._graphs[instruction_id]

    def _link(self, instruction_id: int, index: int, name: str, found: Attribution) -> KernelLink:
        if found.reasons[index]:
            return KernelLink(name, instruction_id, index, reason=found.reasons[index])
        pairs = [
            (KernelNode(handle, op.name, op.op, innermost_module(op.nn_module_stack), role), op)
            for handle, role in found.handles[index]
            for op in self.record.nodes_by_handle.get(handle, ())
        ]
        if not pairs:
            why = "the ETRecord has no op for its debug handle(s) (an ETRecord of another program?)"
            return KernelLink(name, instruction_id, index, xnodes=found.xnodes[index], reason=why, foreign=True)
        # Named after what it ran (or serves), not what was fused into it; quantize/dequantize
        # around an op share its handle but sit at the model's top level: left out when there is more.
        named = [p for p in pairs if p[0].role != ROLE_FUSED] or pairs
        named = [p for p in named if not _plumbing(p[1].op)] or named
        nodes = tuple(node for node, _ in pairs)
        fused = [f"{n.op} ({n.module_path or 'model'})" for n in nodes if n.role == ROLE_FUSED and not _plumbing(n.op)]
        note = "; ".join(x for x in (found.notes[index], "fused: " + ", ".join(dict.fromkeys(fused)) if fused else "") if x)
        return KernelLink(
            name, instruction_id, index, xnodes=found.xnodes[index], nodes=nodes,
            module_path=deepest_module([str(e[0]) for e in (op.nn_module_stack or {}).values()] for _, op in named),
            source_line=source_line({op.name: op.stack_trace for _, op in named}),
            covers=tuple(dict.fromkeys(n.module_path for n in nodes if n.module_path)),
            note=note,
        )


def _plumbing(op: str) -> bool:
    return any(p in op for p in PLUMBING)


def _delegate_handles(record: ETRecordInfo, instruction_id: int) -> tuple[int, ...]:
    handles = record.handle_map.get(str(instruction_id))
    if isinstance(handles, int):
        return (handles,)
    return tuple(dict.fromkeys(h for h in handles or () if isinstance(h, int)))


_PROGRAMS: FileMemo[KernelProgram] = FileMemo()


def clear_cache() -> None:
    """Forget loaded programs and edge-graph flows (benchmarks measure the cold path with it)."""
    _PROGRAMS.clear()
    clear_edge_flows()


def load_kernel_program(pte: PathLike, etrecord: PathLike) -> KernelProgram:
    """Read a .pte and its ETRecord for kernel mapping (kept while the files are unchanged). Raises
    AnalysisError for a missing, foreign or damaged file; a delegate it cannot map only gives its kernels a reason."""
    return _PROGRAMS.get([file_key(pte), file_key(etrecord)], lambda: _read_kernel_program(pte, etrecord))


def _read_kernel_program(pte: PathLike, etrecord: PathLike) -> KernelProgram:
    record = load_etrecord(etrecord)
    delegates = read_delegate_calls(pte)
    methods = delegates.methods()
    method = FORWARD if FORWARD in methods or len(methods) != 1 else methods[0]
    calls = {c.instruction_id: c for c in delegates.calls if c.method == method and c.chain == 0}
    program = KernelProgram(str(Path(pte)), record, load_edge_flow(etrecord), method, calls)
    return program

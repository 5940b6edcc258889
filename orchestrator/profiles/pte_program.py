"""The delegate calls of a .pte and the bytes each delegate runs, and its kernel calls' operators, read
without torch or flatc.

A .pte is an ExecuTorch `Program` flatbuffer (`schema/program.fbs`, identifier `ET12`), followed
by data segments. An extended header at byte 8 (`eh00`) says where the segments start. Each
execution plan (method) holds chains of instructions; a `DelegateCall` instruction names a
`BackendDelegate` (backend id, e.g. `XnnpackBackend`), whose `processed` bytes (what the
backend's `preprocess` produced) are either inline in `backend_delegate_data` or a segment.

ETDump events of a delegate carry the instruction id of their `DelegateCall`, and the
ETRecord's `debug_handle_map` is keyed by the same ids: this module is the link from that id
to the delegate's payload. A `KernelCall` names an entry of the plan's operator table; with the
delegate calls it is what an ETDump of the program would hold, which belongs.py checks an
ETRecord against before anything runs. The ETRecord does not hold the payload (its edge program is the
graph before lowering), so mapping kernels inside a delegate needs the .pte.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.flatbuf import Buffer, FlatBufferError, Table, identifier, root

FILE_IDENTIFIER_PREFIX = b"ET"  # ET12 today; older programs used other ET?? identifiers
EXTENDED_HEADER_MAGIC = b"eh00"
_HEADER_START = 8  # the extended header lives in the padding after the root offset and identifier

# Field slots, in declaration order (executorch/schema/program.fbs).
_PROGRAM_PLANS, _PROGRAM_INLINE_DATA, _PROGRAM_SEGMENTS = 1, 3, 4
_PLAN_NAME, _PLAN_CHAINS, _PLAN_OPERATORS, _PLAN_DELEGATES = 0, 5, 6, 7
_CHAIN_INSTRUCTIONS = 2
_INSTR_TYPE, _INSTR_ARGS = 0, 1
_KERNEL_CALL, _DELEGATE_CALL = 1, 2  # InstructionArguments union: KernelCall=1, DelegateCall=2, ...
_CALL_DELEGATE_INDEX = 0
_CALL_OP_INDEX = 0
_OP_NAME, _OP_OVERLOAD = 0, 1
_DELEGATE_ID, _DELEGATE_PROCESSED = 0, 1
_REF_LOCATION, _REF_INDEX = 0, 1
_INLINE, _SEGMENT = 0, 1
_INLINE_DATA = 0
_SEGMENT_OFFSET, _SEGMENT_SIZE = 0, 1


@dataclass(frozen=True)
class DelegateCall:
    """One DelegateCall instruction and the payload of the delegate it calls."""

    method: str
    chain: int
    instruction_id: int
    delegate_index: int
    backend: str  # BackendDelegate.id, e.g. "XnnpackBackend"
    payload: bytes


@dataclass(frozen=True)
class KernelCall:
    """One KernelCall instruction: the operator it runs (`aten::addmm.out`)."""

    method: str
    chain: int
    instruction_id: int
    operator: str

    @property
    def event_name(self) -> str:
        """What the runtime names this kernel's ETDump event: `native_call_addmm.out` (no namespace), or the
        runtime's own `OPERATOR_CALL` when the program does not name the operator."""
        return "native_call_" + self.operator.split("::")[-1] if self.operator else "OPERATOR_CALL"


@dataclass(frozen=True)
class PteDelegates:
    path: str
    calls: tuple[DelegateCall, ...]
    kernels: tuple[KernelCall, ...] = ()  # the other calls of the program (belongs.py checks an ETRecord by them)

    def call(self, method: str, instruction_id: int, chain: int = 0) -> DelegateCall | None:
        for call in self.calls:
            if call.method == method and call.chain == chain and call.instruction_id == instruction_id:
                return call
        return None

    def methods(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.method for c in self.calls))


def read_delegate_calls(path: str | os.PathLike[str]) -> PteDelegates:
    """Every delegate (and kernel) call of every method of a .pte. Raises AnalysisError naming the file."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                raise AnalysisError(f"{name}: empty file, not an ExecuTorch program (.pte)")
            # Mapped, not read: the weights (most of the file) are never touched.
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return parse_delegate_calls(data, name)
    except FileNotFoundError:
        raise AnalysisError(f"{name}: no such .pte file") from None
    except IsADirectoryError:
        raise AnalysisError(f"{name}: is a directory, not a .pte") from None
    except OSError as exc:
        raise AnalysisError(f"{name}: cannot read: {exc.strerror or exc}") from None


def parse_delegate_calls(data: Buffer, name: str = "<pte>") -> PteDelegates:
    """`read_delegate_calls` on the bytes (or a mapping) of a .pte; `name` is for error messages."""
    if not identifier(data).startswith(FILE_IDENTIFIER_PREFIX):
        raise AnalysisError(f"{name}: not an ExecuTorch program (.pte): no ET file identifier")
    try:
        delegates, kernels = _calls(data)
        return PteDelegates(name, tuple(delegates), tuple(kernels))
    except FlatBufferError as exc:
        raise AnalysisError(f"{name}: corrupt .pte: {exc}") from None


def _segment_base(data: Buffer) -> int:
    header = data[_HEADER_START : _HEADER_START + 32]
    if len(header) < 24 or header[:4] != EXTENDED_HEADER_MAGIC:
        return 0  # no extended header: a program without segments
    return int.from_bytes(header[16:24], "little")


def _calls(data: Buffer) -> tuple[list[DelegateCall], list[KernelCall]]:
    program = root(data)
    inline = program.tables(_PROGRAM_INLINE_DATA)
    segments = program.tables(_PROGRAM_SEGMENTS)
    base = _segment_base(data)
    out, kernels = [], []
    budget = len(data) // 4  # tables visited: vectors of a sound file never share elements
    for plan in program.tables(_PROGRAM_PLANS):
        method = plan.string(_PLAN_NAME) or ""
        delegates, chains = plan.tables(_PLAN_DELEGATES), plan.tables(_PLAN_CHAINS)
        operators = plan.tables(_PLAN_OPERATORS)
        budget = _spend(budget, len(delegates) + len(chains) + len(operators) + 1)
        for chain_index, chain in enumerate(chains):
            instructions = chain.tables(_CHAIN_INSTRUCTIONS)
            budget = _spend(budget, len(instructions) + 1)
            for instruction_id, instruction in enumerate(instructions):
                kind = instruction.integer(_INSTR_TYPE, "u8")
                if kind == _KERNEL_CALL:
                    op = _operator(instruction, operators)
                    kernels.append(KernelCall(method, chain_index, instruction_id, op))
                if kind != _DELEGATE_CALL:
                    continue
                args = instruction.table(_INSTR_ARGS)
                index = args.integer(_CALL_DELEGATE_INDEX, "i32") if args is not None else -1
                if not 0 <= index < len(delegates):
                    raise FlatBufferError(f"instruction {instruction_id} calls delegate {index} of {len(delegates)}")
                backend = delegates[index].string(_DELEGATE_ID) or ""
                payload = _payload(data, delegates[index], inline, segments, base)
                out.append(DelegateCall(method, chain_index, instruction_id, index, backend, payload))
    return out, kernels


def _operator(instruction: Table, operators: list[Table]) -> str:
    """The operator a kernel call runs; '' when the program does not say (the delegates stay readable)."""
    args = instruction.table(_INSTR_ARGS)
    index = args.integer(_CALL_OP_INDEX, "i32") if args is not None else -1
    if not 0 <= index < len(operators):
        return ""
    name, overload = operators[index].string(_OP_NAME) or "", operators[index].string(_OP_OVERLOAD) or ""
    return f"{name}.{overload}" if overload else name


def _spend(budget: int, tables: int) -> int:
    if tables > budget:
        raise FlatBufferError("its vectors overlap (more tables than the file can hold)")
    return budget - tables


def _payload(data: Buffer, delegate: Table, inline: list[Table], segments: list[Table], base: int) -> bytes:
    ref = delegate.table(_DELEGATE_PROCESSED)
    if ref is None:
        return b""
    location, index = ref.integer(_REF_LOCATION, "i8"), ref.integer(_REF_INDEX)
    if location == _INLINE:
        if index >= len(inline):
            raise FlatBufferError(f"inline delegate data {index} of {len(inline)}")
        return inline[index].blob(_INLINE_DATA)
    if location != _SEGMENT or index >= len(segments):
        raise FlatBufferError(f"delegate data in location {location} index {index} ({len(segments)} segments)")
    start = base + segments[index].integer(_SEGMENT_OFFSET, "u64")
    size = segments[index].integer(_SEGMENT_SIZE, "u64")
    if start + size > len(data):
        raise FlatBufferError(f"segment {index} ({size} bytes at {start}) runs past the end of the file")
    return bytes(data[start : start + size])

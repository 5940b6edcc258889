"""The one reader of a `.pte`'s program flatbuffer on the host: methods, their inputs, operators,
delegates and constant values, and whether the program is a KV-cache LLM. Torch-free and cheap.

Follows ExecuTorch's `schema/program.fbs` (file identifier `ET12`). Weights and delegate blobs sit
in segments after the flatbuffer (the extended header `eh00` at byte 8 gives its size), so only
the flatbuffer's bytes are read, whatever the size of the model; the segment table says how long
the file must be, so a truncated one is refused. The runner's twin is `runners/etfarm_pte.h`.
Every position is bounds-checked: a damaged, truncated or foreign file raises `DataError` (exit 2:
the user named it) naming the file, never IndexError or struct.error.

`check_program` is what a job asks before anything is pushed (docs/architecture.md, "Contracts:
model spec"): a program this ExecuTorch loads (identifier ET12), whole, with the method the runner
runs, and without operators the wheel's runtime lacks (ExecuTorch's llama:: custom ops).

An LLM (`PteInfo.llm`): metadata methods `get_max_seq_len`, `get_vocab_size` and `use_kv_cache`
(true) — as ExecuTorch's `export_llama`, optimum-executorch and the runner's llm/ extension write
them — and `forward(tokens [1, S] int64, input_pos [1] int64)`. Such a program is profiled by
generation (`etfarm_runner --generate`), not by executing `forward` on ones.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.base.errors import DataError, UsageError

SUPPORTED_IDENTIFIER = "ET12"  # what executorch==1.5.1's runtime loads
HEAD_BYTES = 64  # ExecuTorch's kNumHeadBytes: enough for the extended header
LLM_CUSTOM_OP_PREFIX = "llama::"
RUNNER_METHOD = "forward"  # the method etfarm_runner executes (runners/etfarm_args.h)

# Field slots (declaration order in program.fbs).
_PROGRAM_PLANS, _PROGRAM_SEGMENTS = 1, 4
_SEGMENT_OFFSET, _SEGMENT_SIZE = 0, 1
_PLAN_NAME, _PLAN_VALUES, _PLAN_INPUTS, _PLAN_OUTPUTS, _PLAN_OPERATORS, _PLAN_DELEGATES = 0, 2, 3, 4, 6, 7
_OP_NAME, _OP_OVERLOAD = 0, 1
_DELEGATE_ID = 0
_EVALUE_TYPE, _EVALUE_VAL = 0, 1
_TENSOR_SCALAR_TYPE, _TENSOR_SIZES, _TENSOR_DYNAMISM = 0, 2, 8
# KernelTypes union members (0 is NONE).
_NULL, _INT, _BOOL, _DOUBLE, _TENSOR, _STRING = 1, 2, 3, 4, 5, 6
_KINDS = {1: "null", 2: "int", 3: "bool", 4: "double", 5: "tensor", 6: "string", 7: "int_list",
          8: "double_list", 9: "bool_list", 10: "tensor_list", 11: "optional_tensor_list"}
DTYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32", 7: "float64",
          11: "bool", 15: "bfloat16"}

Scalar = int | float | bool


@dataclass(frozen=True)
class ValueSpec:
    """One input or output of a method: its kind and, for a tensor, dtype and sizes (upper bounds
    when `dynamic`)."""

    kind: str  # "tensor", "int", "bool", ...
    dtype: str | None = None
    sizes: tuple[int, ...] = ()
    dynamic: bool = False


@dataclass(frozen=True)
class PteMethod:
    name: str
    inputs: tuple[ValueSpec, ...]
    outputs: tuple[ValueSpec, ...]
    operators: tuple[str, ...]  # "ns::op.overload", in the program's operator table order
    delegates: tuple[str, ...]  # backend ids, e.g. "XnnpackBackend"
    constant: Scalar | None = None  # what a constant (metadata) method returns; None for a computing one


@dataclass(frozen=True)
class LlmShape:
    """What generation needs to know about a KV-cache LLM program (see the module docstring)."""

    max_seq_len: int
    max_context_len: int  # KV cache length: get_max_context_len, else get_max_seq_len
    vocab_size: int
    dynamic_shape: bool
    prefill_chunk: int  # tokens per prefill call: forward's bound on S when dynamic, else 1
    n_layers: int | None
    custom_ops: tuple[str, ...]  # llama:: ops (export_llama --use_sdpa_with_kv_cache)


@dataclass(frozen=True)
class PteInfo:
    path: Path
    identifier: str  # "ET12" for programs this ExecuTorch loads
    file_bytes: int
    program_bytes: int  # the flatbuffer (the rest of the file is segments)
    segments: int
    methods: tuple[PteMethod, ...]
    data_end: int = 0  # where the last segment ends: the least size of a whole file

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    def method(self, name: str) -> PteMethod | None:
        return next((m for m in self.methods if m.name == name), None)

    @property
    def metadata(self) -> dict[str, Scalar]:
        """The constant methods' values (get_max_seq_len, use_kv_cache, ...)."""
        return {m.name: m.constant for m in self.methods if m.constant is not None}

    @property
    def operators(self) -> tuple[str, ...]:
        return tuple(sorted({op for m in self.methods for op in m.operators}))

    @property
    def llm(self) -> LlmShape | None:
        return _llm_shape(self)


def read_pte_info(path: Path | str) -> PteInfo:
    """Parse `path`'s program flatbuffer; DataError (one line) when it is not a whole program."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
            program_bytes, segment_base = _header(head)
            data = head + (f.read(program_bytes - len(head)) if program_bytes else f.read())
        file_bytes = path.stat().st_size
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    identifier = data[4:8].decode("ascii", "replace") if len(data) >= 8 else ""
    if not identifier.startswith("ET"):
        raise DataError(f"{path} is not an ExecuTorch program (file identifier {identifier!r}, expected 'ET12')")
    if program_bytes and len(data) < program_bytes:
        raise DataError(f"{path} is truncated: its header announces a {program_bytes}-byte program, "
                        f"the file has {len(data)}")
    try:
        fb = _Flat(data)
        root = fb.root()
        plans = [_method(fb, plan) for plan in fb.tables(root, _PROGRAM_PLANS)]
        segments = fb.tables(root, _PROGRAM_SEGMENTS)
        ends = [int(fb.scalar(t, _SEGMENT_OFFSET, "<Q", 0)) + int(fb.scalar(t, _SEGMENT_SIZE, "<Q", 0))
                for t in segments]
    except _Corrupt as exc:
        raise DataError(f"{path} is a damaged ExecuTorch program: {exc}") from None
    data_end = segment_base + max(ends) if ends else len(data)
    if data_end > file_bytes:
        raise DataError(f"{path} is truncated: its segments end at byte {data_end}, the file has {file_bytes}")
    return PteInfo(path, identifier, file_bytes, len(data), len(segments), tuple(plans), data_end)


def check_program(path: Path | str, method: str = RUNNER_METHOD, *, custom_ops: bool = False) -> PteInfo:
    """What a job checks of a program before anything is pushed: DataError (exit 2) for a file that is
    not a whole program this ExecuTorch loads, or lacks `method`; UsageError for a program needing
    llama:: operators, unless the runtime has them (`custom_ops`: the user's own runtime)."""
    info = read_pte_info(path)
    if info.identifier != SUPPORTED_IDENTIFIER:
        raise DataError(f"{info.path}: program format {info.identifier!r}; this ExecuTorch loads "
                        f"{SUPPORTED_IDENTIFIER!r} programs (export it again with this etfarm's executorch)")
    if info.method(method) is None:
        names = ", ".join(info.method_names) or "none"
        raise DataError(f"{info.path}: no method {method!r} to run (methods: {names})")
    message = None if custom_ops else unsupported_ops_message(info, method)
    if message is not None:
        raise UsageError(message)
    return info


def unsupported_ops_message(info: PteInfo, method: str = "forward") -> str | None:
    """The one line etfarm (and its runner) print for a program needing ExecuTorch's llama:: custom
    ops, which the wheel's runtime lacks; None when the method needs none."""
    found = info.method(method)
    ops = [op for op in (found.operators if found else ()) if op.startswith(LLM_CUSTOM_OP_PREFIX)]
    if not ops:
        return None
    return (f"{info.path.name}: method {method!r} needs operators etfarm's runtime does not have: {', '.join(ops)} "
            "(ExecuTorch's LLM custom ops, from export_llama --use_sdpa_with_kv_cache: export without that flag, "
            "or build etfarm_runner against your own runtime that registers extension/llm/custom_ops)")


Shape = tuple[int | None, ...]  # None: a size not known (symbolic)


def signature_problem(tensors: Sequence[tuple[str | None, Shape]], method: PteMethod, what: str) -> str | None:
    """Why `tensors` (dtype name, sizes) cannot be `method`'s inputs or outputs (`what`: "input" or "output") as
    the program declares them, in a few words; None when they fit. A dynamic tensor's sizes are upper bounds
    (as the runner checks them)."""
    specs, verb = (method.inputs, "takes") if what == "input" else (method.outputs, "gives")
    if len(tensors) != len(specs):
        return f"{len(tensors)} {what}(s); {method.name} {verb} {len(specs)}"
    for index, ((dtype, sizes), spec) in enumerate(zip(tensors, specs, strict=True)):
        fits = spec.kind == "tensor" and (dtype is None or dtype == spec.dtype) and len(sizes) == len(spec.sizes) and all(
            size is None or (size <= bound if spec.dynamic else size == bound)
            for size, bound in zip(sizes, spec.sizes, strict=True))
        if not fits:
            article = "an" if spec.kind[:1] in "aeiou" else "a"
            declared = f"{spec.dtype} {_shape(spec.sizes)}" if spec.kind == "tensor" else f"{article} {spec.kind}"
            bound = " at most" if spec.dynamic else ""
            return f"{what} {index} is {dtype or '?'} {_shape(sizes)}; {method.name} {verb}{bound} {declared}"
    return None


def _shape(sizes: Shape) -> str:
    return "[" + ", ".join("?" if s is None else str(s) for s in sizes) + "]"


def _header(head: bytes) -> tuple[int, int]:
    """(the flatbuffer's size, where segments start) from the extended header; (0, 0) when there is
    none (the whole file is the flatbuffer)."""
    if len(head) >= 32 and head[8:12] == b"eh00":
        return int.from_bytes(head[16:24], "little"), int.from_bytes(head[24:32], "little")
    return 0, 0


def _llm_shape(info: PteInfo) -> LlmShape | None:
    meta = info.metadata
    forward = info.method("forward")
    if forward is None or not all(isinstance(meta.get(k), (int, bool)) for k in ("get_max_seq_len", "get_vocab_size")):
        return None
    if meta.get("use_kv_cache") is not True or len(forward.inputs) != 2:
        return None
    tokens, pos = forward.inputs
    if not (tokens.kind == pos.kind == "tensor" and tokens.dtype == pos.dtype == "int64"):
        return None
    if len(tokens.sizes) != 2 or tokens.sizes[0] != 1 or pos.sizes != (1,):
        return None
    max_seq_len, vocab = int(meta["get_max_seq_len"]), int(meta["get_vocab_size"])
    dynamic = bool(meta.get("enable_dynamic_shape", False)) and tokens.sizes[1] > 1
    context = meta.get("get_max_context_len", max_seq_len)
    layers = meta.get("get_n_layers")
    return LlmShape(
        max_seq_len=max_seq_len, max_context_len=int(context), vocab_size=vocab, dynamic_shape=dynamic,
        prefill_chunk=tokens.sizes[1] if dynamic else 1, n_layers=int(layers) if isinstance(layers, int) else None,
        custom_ops=tuple(op for op in forward.operators if op.startswith(LLM_CUSTOM_OP_PREFIX)),
    )


def _method(fb: _Flat, plan: int) -> PteMethod:
    values = fb.tables(plan, _PLAN_VALUES)
    inputs = [_value(fb, values, i) for i in fb.ints(plan, _PLAN_INPUTS)]
    outputs = [_value(fb, values, i) for i in fb.ints(plan, _PLAN_OUTPUTS)]
    operators = []
    for op in fb.tables(plan, _PLAN_OPERATORS):
        name, overload = fb.string(op, _OP_NAME), fb.string(op, _OP_OVERLOAD)
        operators.append(f"{name}.{overload}" if overload else name)
    delegates = tuple(fb.string(d, _DELEGATE_ID) for d in fb.tables(plan, _PLAN_DELEGATES))
    constant = None
    if not inputs and len(outputs) == 1:
        constant = _scalar(fb, values[fb.ints(plan, _PLAN_OUTPUTS)[0]])
    return PteMethod(fb.string(plan, _PLAN_NAME), tuple(inputs), tuple(outputs), tuple(operators), delegates, constant)


def _value(fb: _Flat, values: list[int], index: int) -> ValueSpec:
    if not 0 <= index < len(values):
        raise _Corrupt(f"value index {index} outside the method's {len(values)} values")
    evalue = values[index]
    kind_code = fb.scalar(evalue, _EVALUE_TYPE, "<B", 0)
    kind = _KINDS.get(kind_code, f"kind{kind_code}")
    if kind_code != _TENSOR:
        return ValueSpec(kind)
    tensor = fb.table(evalue, _EVALUE_VAL)
    code = fb.scalar(tensor, _TENSOR_SCALAR_TYPE, "<b", 0)
    return ValueSpec(kind, DTYPES.get(code, f"scalar_type{code}"), tuple(fb.ints(tensor, _TENSOR_SIZES)),
                     fb.scalar(tensor, _TENSOR_DYNAMISM, "<b", 0) != 0)


def _scalar(fb: _Flat, evalue: int) -> Scalar | None:
    kind = fb.scalar(evalue, _EVALUE_TYPE, "<B", 0)
    if kind not in (_INT, _BOOL, _DOUBLE):
        return None
    val = fb.table(evalue, _EVALUE_VAL)
    if kind == _INT:
        return int(fb.scalar(val, 0, "<q", 0))
    if kind == _BOOL:
        return bool(fb.scalar(val, 0, "<B", 0))
    return float(fb.scalar(val, 0, "<d", 0.0))


class _Corrupt(Exception):
    """Internal: a position outside the buffer or a malformed table."""


class _Flat:
    """Bounds-checked flatbuffer access over bytes (little-endian, as flatbuffers are)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _get(self, fmt: str, pos: int) -> int | float:
        if pos < 0 or pos + struct.calcsize(fmt) > len(self.data):
            raise _Corrupt(f"offset {pos} outside the {len(self.data)}-byte program")
        return struct.unpack_from(fmt, self.data, pos)[0]

    def root(self) -> int:
        return int(self._get("<I", 0))

    def _field(self, table: int, slot: int) -> int | None:
        vtable = table - int(self._get("<i", table))
        vsize = int(self._get("<H", vtable))
        entry = 4 + 2 * slot
        if entry + 2 > vsize:
            return None
        offset = int(self._get("<H", vtable + entry))
        return table + offset if offset else None

    def scalar(self, table: int, slot: int, fmt: str, default: int | float) -> int | float:
        pos = self._field(table, slot)
        return default if pos is None else self._get(fmt, pos)

    def _ref(self, table: int, slot: int) -> int | None:
        pos = self._field(table, slot)
        return None if pos is None else pos + int(self._get("<I", pos))

    def table(self, table: int, slot: int) -> int:
        target = self._ref(table, slot)
        if target is None:
            raise _Corrupt(f"table at {table} lacks field {slot}")
        return target

    def _vector(self, table: int, slot: int) -> tuple[int, int]:
        vec = self._ref(table, slot)
        if vec is None:
            return 0, 0
        count = int(self._get("<I", vec))
        if count > (len(self.data) - vec - 4) // 4:
            raise _Corrupt(f"vector at {vec} claims {count} elements")
        return vec + 4, count

    def vector_len(self, table: int, slot: int) -> int:
        return self._vector(table, slot)[1]

    def tables(self, table: int, slot: int) -> list[int]:
        first, count = self._vector(table, slot)
        return [first + 4 * i + int(self._get("<I", first + 4 * i)) for i in range(count)]

    def ints(self, table: int, slot: int) -> list[int]:
        first, count = self._vector(table, slot)
        return [int(self._get("<i", first + 4 * i)) for i in range(count)]

    def string(self, table: int, slot: int) -> str:
        pos = self._ref(table, slot)
        if pos is None:
            return ""
        length = int(self._get("<I", pos))
        if pos + 4 + length > len(self.data):
            raise _Corrupt(f"string at {pos} runs past the program")
        try:
            return self.data[pos + 4: pos + 4 + length].decode("utf-8")
        except UnicodeDecodeError:
            raise _Corrupt(f"string at {pos} is not UTF-8") from None

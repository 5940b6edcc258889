"""Decode the values of ETDump debug events (intermediate outputs) against a debug buffer, torch-free.

A debug event's `debug_entry` is an `etdump.Value`: a scalar, or a tensor (or tensor list) whose
bytes live in the debug buffer the runner was given (`--debug_buffer_size`), at `offset`. This is
ExecuTorch's `inflate_runtime_output` / `_parse_tensor_value` with numpy instead of torch, with the
same rules, so our numbers are Inspector's numbers:

- a tensor is `buffer[offset : offset + prod(sizes) * itemsize]` viewed as `sizes` (strides are
  ignored, as Inspector ignores them: the runtime writes tensors contiguously);
- an empty tensor is zeros of its shape; scalar values become Python scalars;
- a tensor of a type Inspector cannot read (bfloat16, quantized, ...) decodes to None, which the
  comparison then skips, as Inspector skips None outputs.

Only the events that are compared are decoded (a few per op), so a plain flatbuffers walk per
value is fast enough; every position is checked and a damaged file raises AnalysisError.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError
from orchestrator.base.scalar_types import (
    BITS16,
    BOOL,
    BYTE,
    CHAR,
    DOUBLE,
    FLOAT,
    HALF,
    INT,
    LONG,
    SHORT,
    UINT16,
    scalar_dtypes,
)
from orchestrator.profiles.etdump import ETDump

# etdump.ValueType
VALUE_NULL, VALUE_INT, VALUE_BOOL, VALUE_FLOAT, VALUE_DOUBLE, VALUE_TENSOR, VALUE_TENSOR_LIST, VALUE_STRING = range(8)
_V_TYPE, _V_TENSOR, _V_TENSOR_LIST, _V_INT, _V_FLOAT, _V_DOUBLE, _V_BOOL = range(7)
_T_SCALAR_TYPE, _T_SIZES, _T_STRIDES, _T_OFFSET = range(4)

# Exactly the ScalarTypes Inspector's `_parse_tensor_value` reads (BITS16 as uint16, as Inspector does).
SCALAR_DTYPES: dict[int, np.dtype] = scalar_dtypes(BYTE, CHAR, BOOL, BITS16, UINT16, SHORT, HALF, INT, FLOAT, DOUBLE, LONG)

DebugValue = np.ndarray | list | int | float | bool | None


class _Corrupt(Exception):
    pass


class _Reader:
    """Just enough of a flatbuffer table reader, bounds-checked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n = len(data)

    def _get(self, fmt: str, pos: int) -> Any:
        size = struct.calcsize(fmt)
        if pos < 0 or pos + size > self.n:
            raise _Corrupt(f"read at {pos} outside the file")
        return struct.unpack_from(fmt, self.data, pos)[0]

    def field(self, table: int, slot: int) -> int:
        """Absolute position of a field's value, or -1 when absent."""
        vtable = table - self._get("<i", table)
        vsize = self._get("<H", vtable)
        entry = 4 + 2 * slot
        if entry + 2 > vsize:
            return -1
        off = self._get("<H", vtable + entry)
        return table + off if off else -1

    def scalar(self, table: int, slot: int, fmt: str, default: Any) -> Any:
        pos = self.field(table, slot)
        return default if pos < 0 else self._get(fmt, pos)

    def ref(self, table: int, slot: int) -> int:
        pos = self.field(table, slot)
        return -1 if pos < 0 else pos + self._get("<I", pos)

    def vector(self, table: int, slot: int, fmt: str) -> list[Any]:
        pos = self.ref(table, slot)
        if pos < 0:
            return []
        count = self._get("<I", pos)
        size = struct.calcsize(fmt)
        if pos + 4 + count * size > self.n:
            raise _Corrupt("vector runs past the end of the file")
        return list(struct.unpack_from(f"<{count}{fmt.lstrip('<')}", self.data, pos + 4))

    def tables(self, table: int, slot: int) -> list[int]:
        pos = self.ref(table, slot)
        if pos < 0:
            return []
        count = self._get("<I", pos)
        return [pos + 4 + 4 * i + self._get("<I", pos + 4 + 4 * i) for i in range(count)]


def debug_value(dump: ETDump, event: int, buffer: Any, buffer_name: str = "<debug buffer>") -> DebugValue:
    """The value of debug event `event` (a row of dump.events), inflated against `buffer` (bytes-like, or None)."""
    pos = int(dump.events.debug_entry_pos[event])
    if pos < 0:
        raise AnalysisError(f"{dump.path}: debug event {event} has no debug entry")
    try:
        return _value(_Reader(dump.data), pos, buffer, buffer_name)
    except _Corrupt as exc:
        raise AnalysisError(f"{dump.path}: corrupt debug event {event}: {exc}") from None


# Scalar kinds: (Value slot of the payload table, struct format of its one field, Python type).
_SCALARS = {
    VALUE_INT: (_V_INT, "<q", int),
    VALUE_BOOL: (_V_BOOL, "<B", bool),
    VALUE_FLOAT: (_V_FLOAT, "<f", float),
    VALUE_DOUBLE: (_V_DOUBLE, "<d", float),
}


def _value(r: _Reader, pos: int, buffer: Any, buffer_name: str) -> DebugValue:
    kind = r.scalar(pos, _V_TYPE, "<b", 0)
    if kind in _SCALARS:
        slot, fmt, cast = _SCALARS[kind]
        payload = r.ref(pos, slot)
        if payload < 0:
            raise _Corrupt(f"value of kind {kind} without its payload")
        return cast(r.scalar(payload, 0, fmt, 0))
    if kind == VALUE_TENSOR:
        tensor = r.ref(pos, _V_TENSOR)
        if tensor < 0:
            raise _Corrupt("tensor value without a tensor")
        return _tensor(r, tensor, buffer, buffer_name)
    if kind == VALUE_TENSOR_LIST:
        tlist = r.ref(pos, _V_TENSOR_LIST)
        if tlist < 0:
            raise _Corrupt("tensor-list value without a list")
        return [_tensor(r, t, buffer, buffer_name) for t in r.tables(tlist, 0)]
    return None  # Null, String and unknown kinds: Inspector inflates them to None


def _tensor(r: _Reader, pos: int, buffer: Any, buffer_name: str) -> np.ndarray | None:
    scalar_type = r.scalar(pos, _T_SCALAR_TYPE, "<b", 0)
    sizes = tuple(int(s) for s in r.vector(pos, _T_SIZES, "q"))
    offset_pos = r.field(pos, _T_OFFSET)
    dtype = SCALAR_DTYPES.get(scalar_type)
    if dtype is None:
        return None
    if any(s < 0 for s in sizes):
        raise _Corrupt(f"negative tensor size {sizes}")
    nbytes = math.prod(sizes) * dtype.itemsize
    if buffer is None or nbytes == 0:
        return np.zeros(sizes, dtype=dtype)
    if offset_pos < 0:
        raise _Corrupt("tensor without an offset into the debug buffer")
    offset = int(r._get("<q", offset_pos))
    if offset < 0 or offset + nbytes > len(buffer):
        raise AnalysisError(
            f"{buffer_name}: a tensor of {nbytes} bytes at offset {offset} lies past the end of the debug buffer "
            f"({len(buffer)} bytes): the buffer is truncated or belongs to another run"
        )
    return np.frombuffer(buffer, dtype=dtype, count=math.prod(sizes), offset=offset).reshape(sizes)

"""Bounds-checked reads of small flatbuffer tables (a .pte's program, an XNNPACK graph).

The `flatbuffers` package reads without checking offsets, so a damaged file could raise
IndexError deep inside it or ask for a vector of four billion elements. These helpers check
every position against the buffer first and raise `FlatBufferError` (callers turn it into an
AnalysisError naming the file). For the columnar, numpy-backed reader of large ETDumps see
`etdump.py`; the tables read here number in the thousands at most.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from functools import cached_property

_U8, _I8, _U16, _I16 = struct.Struct("<B"), struct.Struct("<b"), struct.Struct("<H"), struct.Struct("<h")
_U32, _I32, _U64, _F32 = struct.Struct("<I"), struct.Struct("<i"), struct.Struct("<Q"), struct.Struct("<f")
Buffer = bytes | mmap.mmap  # what the tables are read from
SCALARS = {"u8": _U8, "i8": _I8, "u16": _U16, "i16": _I16, "u32": _U32, "i32": _I32, "u64": _U64, "f32": _F32}


class FlatBufferError(Exception):
    """A flatbuffer position or length points outside its buffer."""


def _read(buf: Buffer, fmt: struct.Struct, pos: int, what: str) -> int | float:
    if pos < 0 or pos + fmt.size > len(buf):
        raise FlatBufferError(f"{what} at byte {pos} lies outside the {len(buf)}-byte buffer")
    return fmt.unpack_from(buf, pos)[0]


def _uoffset(buf: Buffer, pos: int, what: str) -> int:
    return pos + int(_read(buf, _U32, pos, what))


@dataclass(frozen=True)  # not slots: cached_property keeps the decoded vtable in __dict__
class Table:
    """One flatbuffer table: `buf` is the whole buffer, `pos` the table's start in it."""

    buf: Buffer
    pos: int

    @cached_property
    def _offsets(self) -> tuple[int, ...]:
        """The vtable: each field's offset from the table start (0: not stored)."""
        vtable = self.pos - int(_read(self.buf, _I32, self.pos, "table"))
        size = int(_read(self.buf, _U16, vtable, "vtable"))
        if size < 4 or size % 2 or vtable + size > len(self.buf):
            raise FlatBufferError(f"vtable at byte {vtable} of size {size} does not fit the {len(self.buf)}-byte buffer")
        return struct.unpack_from(f"<{(size - 4) // 2}H", self.buf, vtable + 4)

    def _field(self, slot: int) -> int:
        """Absolute position of field `slot`, -1 when the table does not store it (default value)."""
        offsets = self._offsets
        offset = offsets[slot] if slot < len(offsets) else 0
        return self.pos + offset if offset else -1

    def scalar(self, slot: int, kind: str, default: int | float = 0) -> int | float:
        """A scalar field ('u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'u64', 'f32')."""
        at = self._field(slot)
        return default if at < 0 else _read(self.buf, SCALARS[kind], at, "field")

    def integer(self, slot: int, kind: str = "u32", default: int = 0) -> int:
        return int(self.scalar(slot, kind, default))

    def table(self, slot: int) -> Table | None:
        at = self._field(slot)
        return None if at < 0 else Table(self.buf, _uoffset(self.buf, at, "table offset"))

    def _vector(self, slot: int, elem_size: int) -> tuple[int, int]:
        """(start of the elements, length) of a vector field; (0, 0) when absent."""
        at = self._field(slot)
        if at < 0:
            return 0, 0
        vec = _uoffset(self.buf, at, "vector offset")
        length = int(_read(self.buf, _U32, vec, "vector length"))
        if vec + 4 + length * elem_size > len(self.buf):
            raise FlatBufferError(f"a vector of {length} elements at byte {vec} runs past the end of the buffer")
        return vec + 4, length

    def tables(self, slot: int) -> list[Table]:
        start, length = self._vector(slot, 4)
        return [Table(self.buf, _uoffset(self.buf, start + 4 * i, "vector element")) for i in range(length)]

    def uints(self, slot: int) -> tuple[int, ...]:
        start, length = self._vector(slot, 4)
        return struct.unpack_from(f"<{length}I", self.buf, start) if length else ()

    def blob(self, slot: int) -> bytes:
        start, length = self._vector(slot, 1)
        return bytes(self.buf[start : start + length])

    def string(self, slot: int) -> str | None:
        if self._field(slot) < 0:
            return None
        return self.blob(slot).decode("utf-8", errors="replace")


def root(buf: Buffer, start: int = 0) -> Table:
    """The root table of the flatbuffer that begins at `start` (no size prefix)."""
    return Table(buf, _uoffset(buf, start, "root offset"))


def identifier(buf: Buffer, start: int = 0) -> bytes:
    """The 4-byte file identifier of the flatbuffer at `start` (b'' when too short)."""
    return bytes(buf[start + 4 : start + 8]) if len(buf) >= start + 8 else b""

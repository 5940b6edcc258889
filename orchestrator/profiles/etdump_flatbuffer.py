"""Bounds-checked, columnar reads of a flatbuffer: a field of many tables, many vectors, many strings at once.

The machinery under the ETDump reader (etdump.py): tables of one type are read as a column with
numpy gathers over the whole buffer, each distinct vtable decoded once, strings interned by
content with each distinct string decoded once. Every position is checked before it is
dereferenced; a bad one raises `Corrupt`, which the reader turns into an AnalysisError naming
the file.

Columns hold one entry per event (hundreds of thousands in a long run) and few distinct values
(a handful of vtables, a few dozen event names): `factorize` groups them with one comparison
pass per distinct value instead of a sort, and falls back to a sort when there are many.
"""

from __future__ import annotations

import numpy as np

_HASH_BASE = np.uint64(0x100000001B3)  # FNV prime: any odd multiplier spreads bytes well
_MAX_HASH_BYTES = 1 << 24  # cap on the fixed-width byte matrix used to intern strings
# Strings longer than this are decoded one by one: they are few (at most the file's size over this
# width), and a matrix as wide as the longest string would cost a Python step per 8 bytes of it.
_WIDE_STRING_BYTES = 256
_FEW = 16  # distinct values up to which `factorize` compares instead of sorting
_WORD_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


class Corrupt(Exception):
    """Raised deep in the reader, turned into AnalysisError with the file name."""


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`np.unique(values, return_index=True, return_inverse=True)`: sorted uniques, the first index
    of each, and each value's index into the uniques, without sorting when few values are distinct."""
    n = values.shape[0]
    if n == 0 or n <= 4 * _FEW:
        return _unique(values)
    inverse = np.full(n, -1, dtype=np.int64)
    found: list[int] = []  # first index of each distinct value, in order of appearance
    start = 0
    while start < n:
        if len(found) == _FEW:
            return _unique(values)
        found.append(start)
        inverse[values == values[start]] = len(found) - 1
        rest = np.flatnonzero(inverse[start:] < 0)
        start = start + int(rest[0]) if rest.size else n
    first = np.asarray(found, dtype=np.int64)
    order = np.argsort(values[first], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[first[order]], first[order], rank[inverse]


def _unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    uniques, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    return uniques, first, inverse.reshape(-1)


class Buffer:
    """Bounds-checked vectorised little-endian reads over one immutable buffer."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.n = len(data)
        self.u8 = np.frombuffer(data, dtype=np.uint8)
        self._views: dict[str, np.ndarray] = {}

    def check(self, pos: np.ndarray, size: int, what: str) -> None:
        if pos.size and (int(pos.min()) < 0 or int(pos.max()) > self.n - size):
            raise Corrupt(f"{what} points outside the file")

    def read(self, pos: np.ndarray, dtype: str, what: str) -> np.ndarray:
        dt = np.dtype(dtype)
        size = dt.itemsize
        pos = np.asarray(pos, dtype=np.int64)
        self.check(pos, size, what)
        if size == 1:
            return self.u8[pos].view(dt)
        if not (pos & (size - 1)).any():  # aligned (the normal case): typed view, one gather
            view = self._views.get(dtype)
            if view is None:
                view = self._views[dtype] = np.frombuffer(self.data, dtype=dt, count=self.n // size)
            return view[pos // size]
        return self.u8[pos[:, None] + np.arange(size)].view(dt).reshape(-1)


class Tables:
    """A column of flatbuffer tables of one type: field access for all of them at once."""

    def __init__(self, buf: Buffer, pos: np.ndarray, what: str) -> None:
        self.buf, self.pos, self.what = buf, np.asarray(pos, dtype=np.int64), what
        vt = self.pos - buf.read(self.pos, "<i4", f"{what} table")
        buf.check(vt, 4, f"{what} vtable")
        # Tables built by one builder share a handful of vtables: decode each once.
        self._vt_unique, _, self._vt_index = factorize(vt)
        self._vt_size = buf.read(self._vt_unique, "<u2", f"{what} vtable").astype(np.int64)
        buf.check(self._vt_unique + self._vt_size, 0, f"{what} vtable")

    def field(self, slot: int) -> np.ndarray:
        """Absolute position of a field's value for each table, -1 where absent."""
        entry = 4 + 2 * slot
        has = self._vt_size >= entry + 2
        voff = np.zeros(self._vt_unique.shape, dtype=np.int64)
        voff[has] = self.buf.read(self._vt_unique[has] + entry, "<u2", f"{self.what} vtable")
        if not voff.any():
            return np.full(self.pos.shape, -1, dtype=np.int64)
        voff = voff[self._vt_index]
        return np.where(voff > 0, self.pos + voff, -1)

    def scalar(self, slot: int, dtype: str, default: int) -> np.ndarray:
        fpos = self.field(slot)
        present = fpos >= 0
        out = np.full(self.pos.shape, default, dtype=np.dtype(dtype).newbyteorder("="))
        if present.all():
            out[:] = self.buf.read(fpos, dtype, f"{self.what} field")
        elif present.any():
            out[present] = self.buf.read(fpos[present], dtype, f"{self.what} field")
        return out

    def ref(self, slot: int) -> np.ndarray:
        """Position of the table/vector/string a field refers to, -1 where absent."""
        fpos = self.field(slot)
        present = fpos >= 0
        if present.all():
            return fpos + self.buf.read(fpos, "<u4", f"{self.what} offset")
        out = np.full(self.pos.shape, -1, dtype=np.int64)
        if present.any():
            out[present] = fpos[present] + self.buf.read(fpos[present], "<u4", f"{self.what} offset")
        return out


def vector_lengths(buf: Buffer, vpos: np.ndarray, elem_size: int, what: str) -> np.ndarray:
    """Lengths of vectors (0 where absent), each checked to lie inside the file."""
    present = vpos >= 0
    lengths = np.zeros(vpos.shape, dtype=np.int64)
    if present.any():
        lengths[present] = buf.read(vpos[present], "<u4", f"{what} vector")
        if (vpos[present] + 4 + lengths[present] * elem_size > buf.n).any():
            raise Corrupt(f"{what} vector runs past the end of the file")
    if int(lengths.sum()) * elem_size > buf.n:  # vectors aliasing one another: refuse rather than multiply memory
        raise Corrupt(f"{what} vectors hold more elements than the file can")
    return lengths


def vector(buf: Buffer, vpos: np.ndarray, elem_size: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Lengths of vectors (0 where absent) and the positions of all their elements, concatenated."""
    present = vpos >= 0
    lengths = vector_lengths(buf, vpos, elem_size, what)
    total = int(lengths.sum())
    starts = np.repeat(np.where(present, vpos + 4, 0), lengths)
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return lengths, starts + (np.arange(total, dtype=np.int64) - first) * elem_size


def table_vector(buf: Buffer, vpos: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    lengths, elems = vector(buf, vpos, 4, what)
    return lengths, elems + buf.read(elems, "<u4", f"{what} element")


class StringTable:
    """Interns strings by content so that equal names share one code."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._codes: dict[str, int] = {}

    def code(self, text: str) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self.strings)
            self.strings.append(text)
        return code

    def intern(self, buf: Buffer, spos: np.ndarray, what: str) -> np.ndarray:
        """String codes for string positions (-1 stays -1), decoding each distinct content once.

        Linear in the file size whatever the file claims: references to one string (flatbuffers
        shares equal strings) are collapsed by position before anything is decoded, and strings
        that overlap each other, which no flatbuffers builder writes, are refused. So the bytes
        decoded add up to at most the file's size.
        """
        codes = np.full(spos.shape, -1, dtype=np.int32)
        present = np.flatnonzero(spos >= 0)
        if present.size == 0:
            return codes
        pos, by_position = _distinct_positions(spos[present])
        lengths = buf.read(pos, "<u4", f"{what} string").astype(np.int64)
        ends = pos + 4 + lengths
        if (ends > buf.n).any():
            raise Corrupt(f"{what} string runs past the end of the file")
        if (ends[:-1] > pos[1:]).any():
            raise Corrupt(f"{what} strings overlap each other")
        codes[present] = self._codes_for(buf, pos, lengths)[by_position]
        return codes

    def _codes_for(self, buf: Buffer, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Codes of distinct, non-overlapping strings: short ones hashed as a matrix, long ones decoded."""
        wide = lengths > _WIDE_STRING_BYTES
        if not wide.any():
            return self._codes_of_short(buf, pos, lengths)
        codes = np.empty(pos.shape, dtype=np.int32)
        codes[wide] = self._decode_each(buf, pos[wide], lengths[wide])
        if not wide.all():
            codes[~wide] = self._codes_of_short(buf, pos[~wide], lengths[~wide])
        return codes

    def _codes_of_short(self, buf: Buffer, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        width = int(lengths.max())
        if width * pos.size > _MAX_HASH_BYTES:  # too many to hold as a matrix: decode each one once
            return self._decode_each(buf, pos, lengths)
        # Fixed-width rows of 8-byte words -> 64-bit hash per string -> one decode per distinct
        # hash. Collisions are ruled out below by comparing every row with its representative.
        words = _string_words(buf, pos + 4, lengths, (width + 7) // 8)
        hashes = lengths.astype(np.uint64)
        with np.errstate(over="ignore"):
            for j in range(words.shape[1]):
                hashes = (hashes * _HASH_BASE) ^ words[:, j]
        _, first, inverse = factorize(hashes)
        if not (words == words[first[inverse]]).all() or not (lengths == lengths[first[inverse]]).all():
            return self._decode_each(buf, pos, lengths)
        uniq_codes = np.array(
            [self.code(self._decode(buf, int(pos[i]), int(lengths[i]))) for i in first], dtype=np.int32
        )
        return uniq_codes[inverse]

    def _decode_each(self, buf: Buffer, pos: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return np.array([self.code(self._decode(buf, int(p), int(n))) for p, n in zip(pos, lengths, strict=True)], dtype=np.int32)

    @staticmethod
    def _decode(buf: Buffer, pos: int, length: int) -> str:
        return buf.data[pos + 4 : pos + 4 + length].decode("utf-8", errors="replace")


def _distinct_positions(spos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct positions and each position's index into them; no sort when the positions
    already ascend or descend, as a builder lays out one string per reference."""
    steps = np.diff(spos)
    if (steps > 0).all():
        return spos, np.arange(spos.size)
    if (steps < 0).all():
        return spos[::-1], np.arange(spos.size)[::-1]
    uniques, _, inverse = _unique(spos)
    return uniques, inverse


def _string_words(buf: Buffer, starts: np.ndarray, lengths: np.ndarray, nwords: int) -> np.ndarray:
    """Each string's bytes as `nwords` little-endian uint64 words, zeroed past its length."""
    width = 8 * nwords
    inside = starts <= buf.n - width
    window = None
    if inside.any():  # a sliding-window view turns the gather into one row copy per string
        window = np.lib.stride_tricks.as_strided(buf.u8, shape=(buf.n - width + 1, width), strides=(1, 1), writeable=False)
    if window is not None and inside.all():
        rows = window[starts]
    else:
        rows = np.empty((starts.shape[0], width), dtype=np.uint8)
        if window is not None:
            rows[inside] = window[starts[inside]]
        idx = starts[~inside, None] + np.arange(width)  # strings near the end of the file
        rows[~inside] = buf.u8[np.minimum(idx, buf.n - 1)]
    words = rows.view("<u8").astype(np.uint64, copy=False)
    words &= _WORD_MASKS[np.clip(lengths[:, None] - 8 * np.arange(nwords), 0, 8)]
    return words

"""ETFT: the little tensor file format shared by the host and the C++ runner.

The runner reads model inputs from it (`--inputs`) and writes the outputs of
its last execution to it (`--output_file`), so verification needs only numpy on
the host. Layout, all integers little-endian:

    magic   4 bytes  b"ETFT"
    version u32      1
    count   u32      number of tensors
    count times:
        scalar_type u32   ExecuTorch ScalarType code (see SCALAR_TYPES)
        ndim        u32
        sizes       i64 * ndim
        nbytes      u64
        data        nbytes bytes, contiguous row-major
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from orchestrator.base.cache import write_bytes_atomic
from orchestrator.base.errors import AnalysisError
from orchestrator.base.scalar_types import BOOL, BYTE, CHAR, DOUBLE, FLOAT, HALF, INT, LONG, SHORT, scalar_dtypes

MAGIC = b"ETFT"
VERSION = 1

# The ScalarType codes the runner reads and writes (orchestrator/base/scalar_types.py has them all).
SCALAR_TYPES: dict[int, np.dtype] = scalar_dtypes(BYTE, CHAR, SHORT, INT, LONG, HALF, FLOAT, DOUBLE, BOOL)
_CODES = {dtype: code for code, dtype in SCALAR_TYPES.items()}


def write_tensors(path: Path, arrays: list[np.ndarray]) -> None:
    parts = [MAGIC, struct.pack("<II", VERSION, len(arrays))]
    for array in arrays:
        array = np.asarray(array)  # not ascontiguousarray: it turns 0-d tensors into 1-d
        dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder == ">" else array.dtype
        code = _CODES.get(np.dtype(dtype))
        if code is None:
            raise ValueError(f"unsupported tensor dtype {array.dtype}")
        data = array.astype(dtype, copy=False).tobytes(order="C")
        parts.append(struct.pack("<II", code, array.ndim))
        parts.append(struct.pack(f"<{array.ndim}q", *array.shape))
        parts.append(struct.pack("<Q", len(data)))
        parts.append(data)
    write_bytes_atomic(path, b"".join(parts))


def read_tensors(path: Path) -> list[np.ndarray]:
    data = Path(path).read_bytes()
    try:
        return _parse(data)
    except (struct.error, ValueError) as exc:
        raise AnalysisError(f"{path}: not a valid ETFT tensor file ({exc})") from None


def _parse(data: bytes) -> list[np.ndarray]:
    if data[:4] != MAGIC:
        raise ValueError("bad magic")
    version, count = struct.unpack_from("<II", data, 4)
    if version != VERSION:
        raise ValueError(f"unsupported version {version}")
    offset = 12
    arrays = []
    for _ in range(count):
        code, ndim = struct.unpack_from("<II", data, offset)
        offset += 8
        shape = struct.unpack_from(f"<{ndim}q", data, offset)
        offset += 8 * ndim
        (nbytes,) = struct.unpack_from("<Q", data, offset)
        offset += 8
        if code not in SCALAR_TYPES:
            raise ValueError(f"unknown scalar type {code}")
        if offset + nbytes > len(data):
            raise ValueError("truncated")
        dtype = SCALAR_TYPES[code]
        arrays.append(np.frombuffer(data, dtype=dtype, count=nbytes // dtype.itemsize, offset=offset).reshape(shape))
        offset += nbytes
    return arrays

"""ExecuTorch's ScalarType codes as numpy dtypes: the one table (ground: artifacts and profiles both read it).

The codes are ExecuTorch's (`runtime/core/portable_type/scalar_type.h`, the same numbers as
`executorch_flatbuffer.ScalarType`). Each reader takes the codes it handles: the ETFT tensor file
(artifacts/tensorfile.py) those the C++ runner reads and writes; ETDump debug values
(profiles/etdump_values.py) exactly those Inspector's `_parse_tensor_value` reads, BITS16 as uint16 as
Inspector does. A code outside a reader's set is a type it does not read (bfloat16, quantized, ...).
"""

from __future__ import annotations

import numpy as np

BYTE, CHAR, SHORT, INT, LONG, HALF, FLOAT, DOUBLE, BOOL, BITS16, UINT16 = 0, 1, 2, 3, 4, 5, 6, 7, 11, 22, 27

SCALAR_DTYPES: dict[int, np.dtype] = {
    BYTE: np.dtype("<u1"),
    CHAR: np.dtype("<i1"),
    SHORT: np.dtype("<i2"),
    INT: np.dtype("<i4"),
    LONG: np.dtype("<i8"),
    HALF: np.dtype("<f2"),
    FLOAT: np.dtype("<f4"),
    DOUBLE: np.dtype("<f8"),
    BOOL: np.dtype("?"),
    BITS16: np.dtype("<u2"),
    UINT16: np.dtype("<u2"),
}


def scalar_dtypes(*codes: int) -> dict[int, np.dtype]:
    """The dtypes of these codes only: what one reader accepts."""
    return {code: SCALAR_DTYPES[code] for code in codes}

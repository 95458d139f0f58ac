"""Arrow arrays to numpy and back without pandas: numbers and booleans through their buffers, text through lists.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array``) import pandas, which costs 0.4 s per process; the one
CSV reader (:mod:`podium.grading.table`), the metrics and the data preparation move their columns through these.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

__all__ = ["from_numpy", "strings", "to_numpy"]

_NUMPY_TYPES = {
    pa.float64(): np.float64,
    pa.float32(): np.float32,
    pa.int64(): np.int64,
    pa.int32(): np.int32,
    pa.uint64(): np.uint64,
    pa.uint32(): np.uint32,
}


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buffer, dtype=np.uint8), bitorder="little")[offset : offset + length].astype(
        bool
    )


def to_numpy(values: pa.Array | pa.ChunkedArray, *, fill: object = None) -> np.ndarray:
    """An Arrow array as numpy; nulls become ``fill`` (required when there are nulls).

    Numbers and booleans keep their dtype; text becomes an object array of ``str``. Chunks of
    numbers are copied one by one into the result (no combined copy of the whole column first).
    """
    if isinstance(values, pa.ChunkedArray) and values.num_chunks > 1 and values.type in _NUMPY_TYPES:
        if values.null_count and fill is None:
            raise ValueError("the array holds nulls; pass fill=")
        parts = iter(values.chunks)
        first = to_numpy(next(parts), fill=fill)
        result = np.empty(len(values), dtype=first.dtype)
        result[: len(first)] = first
        at = len(first)
        for chunk in parts:
            result[at : at + len(chunk)] = to_numpy(chunk, fill=fill)
            at += len(chunk)
        return result
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    if array.null_count and fill is None:
        raise ValueError("the array holds nulls; pass fill=")
    kind = array.type
    if kind in _NUMPY_TYPES:
        data = np.frombuffer(array.buffers()[1], dtype=_NUMPY_TYPES[kind], count=array.offset + len(array))
        out = data[array.offset :].copy()
    elif kind == pa.bool_():
        out = _bits(array.buffers()[1], array.offset, len(array))
    else:
        return np.array(
            [fill if v is None else v for v in array.to_pylist()] if array.null_count else array.to_pylist(),
            dtype=object,
        )
    if array.null_count:
        out[~_bits(array.buffers()[0], array.offset, len(array))] = fill
    return out


def from_numpy(values: np.ndarray) -> pa.Array:
    """A numpy array as Arrow: int64/float64/bool through buffers, anything else as text."""
    values = np.asarray(values)
    for arrow_type, dtype in ((pa.int64(), np.int64), (pa.float64(), np.float64)):
        if values.dtype == dtype:
            return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(np.ascontiguousarray(values))])
    if values.dtype == bool:
        packed = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(packed)])
    return strings([str(v) for v in values])


def strings(items: Iterable[str]) -> pa.Array:
    """An Arrow string array from Python strings."""
    encoded = [s.encode("utf-8") for s in items]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError("text column larger than 2 GiB")
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )

"""Box strings split into records: the parsing that every detection metric shares.

A cell holds repeated fixed-width records ("label confidence x0 y0 x1 y1 ..."). All cells are split
once into one table of records plus the row of each record, so matching can work on all rows at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from podium.metrics._common import FloatArray, IndexArray, IntArray, StrArray, _reject, _to_numbers, _tokenize

__all__ = ["Records", "label_codes", "parse_records", "same_key_pairs"]


class Records(NamedTuple):
    """Parsed records: the label token (if any), the numeric tokens, and the row of each record."""

    labels: StrArray
    numbers: FloatArray
    rows: IndexArray


def parse_records(
    cells: Sequence[str] | npt.NDArray[np.object_],
    layout: str,
    *,
    answers: bool,
    allow_empty: bool = True,
) -> Records:
    """Split cells into records laid out as ``layout`` (space-separated token names).

    The token named ``label`` stays text; every other token must be a finite number. With
    ``allow_empty=False`` an empty prediction cell is rejected (the published grader fails on it).
    """
    names = layout.split()
    fix = f"write each object as the {len(names)} tokens '{layout}', separated by spaces"
    what = "box string"
    cells = list(cells)
    if not allow_empty and not answers:
        empty = [i for i, cell in enumerate(cells) if not cell.strip()]
        if empty:
            _reject(
                answers,
                f"{what}: empty cells are not accepted",
                [f"row {i + 1}" for i in empty[:5]],
                "write at least one object in every row (see the sample submission)",
            )
    width = len(names)
    tokens, rows = _tokenize(cells, width, what=what, answers=answers, fix=fix)
    columns = [
        _to_numbers(tokens[k::width], rows, np.float64, what=f"{what}: {name}", answers=answers, fix=fix)
        for k, name in enumerate(names)
        if name != "label"
    ]
    labels = tokens[names.index("label") :: width] if "label" in names else [""] * len(rows)
    label_array = np.empty(len(labels), dtype=object)
    label_array[:] = labels
    return Records(label_array, np.column_stack(columns), rows)


def same_key_pairs(keys_a: IntArray, keys_b: IntArray) -> tuple[IndexArray, IndexArray]:
    """Every pair (a, b) with ``keys_a[a] == keys_b[b]``, sorted by a, then by b."""
    order_b = np.argsort(keys_b, kind="stable")
    sorted_b = keys_b[order_b]
    low = np.searchsorted(sorted_b, keys_a, side="left")
    counts = np.searchsorted(sorted_b, keys_a, side="right") - low
    a = np.repeat(np.arange(len(keys_a)), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return a, order_b[np.repeat(low, counts) + within]


def label_codes(*label_arrays: StrArray) -> list[IntArray]:
    """Integer codes of labels (their rank in sorted order), shared across the arrays."""
    lists = [array.tolist() for array in label_arrays]
    vocabulary = {label: code for code, label in enumerate(sorted(set().union(*lists)))}
    return [np.fromiter(map(vocabulary.__getitem__, labels), dtype=np.int64, count=len(labels)) for labels in lists]

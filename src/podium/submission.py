"""The one submission check: columns, ids, types and value rules, then row alignment.

The same functions serve the validation endpoint (expected ids from the sample submission, no
answers in sight) and grading (expected ids from the answers). Every failure is an
:class:`InvalidSubmissionError` that names the rule, the first offending ids or rows, and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from podium.competition import Column, Competition
from podium.errors import InvalidSubmissionError
from podium.table import Frame

__all__ = ["Alignment", "align", "check_columns", "convert_column", "keys_of"]

_KEY_SEP = "\x1f"
_TRUE = frozenset({"true", "1", "1.0", "yes"})
_FALSE = frozenset({"false", "0", "0.0", "no"})
_RLE = re.compile(r"^\s*(\d+\s+\d+(\s+\d+\s+\d+)*)?\s*$")
_STRIPPED_KINDS = frozenset({"id", "int_id", "float", "probability", "int", "label", "bool", "rle", "tokens", "boxes"})


def _rows(mask: np.ndarray, values: np.ndarray, keys: np.ndarray | None) -> list[str]:
    """Describe the first offending cells as 'row N (id X): value'."""
    out = []
    for i in np.flatnonzero(mask)[:5]:
        where = f"row {i + 2}" + (f" (id {keys[i]})" if keys is not None else "")
        out.append(f"{where}: {values[i]!r}")
    return out


def _to_float(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse text cells as float64; returns (numbers, mask of cells that are not numbers)."""
    arrow = pa.array(values, type=pa.string())
    try:
        return pc.cast(arrow, pa.float64()).to_numpy(zero_copy_only=False), np.zeros(len(values), bool)
    except pa.ArrowInvalid:
        pass
    numbers = np.empty(len(values))
    bad = np.zeros(len(values), bool)
    for i, cell in enumerate(values):
        try:
            numbers[i] = float(cell)
        except ValueError:
            numbers[i], bad[i] = np.nan, True
    return numbers, bad


def convert_column(
    column: Column, values: np.ndarray, *, keys: np.ndarray | None = None, what: str = "submission"
) -> np.ndarray:
    """Convert one text column to its kind's array, or raise InvalidSubmissionError."""
    kind, name = column.kind, column.name
    if kind in _STRIPPED_KINDS:
        values = np.array([v.strip() for v in values], dtype=object) if len(values) else values
    if kind in ("id", "label", "text", "tokens", "boxes"):
        return values
    if kind == "rle":
        bad = ~pc.match_substring_regex(pa.array(values, pa.string()), _RLE.pattern).to_numpy(zero_copy_only=False)
        empty_tokens = column.options.get("empty_tokens", ())
        if empty_tokens:
            bad &= ~np.isin(values, list(empty_tokens))
        if bad.any():
            raise InvalidSubmissionError(
                f"column {name!r} must hold run-length encodings ('start length' pairs of positive integers)",
                examples=_rows(bad, values, keys),
                fix="write space-separated start/length pairs, or an empty cell for an empty mask",
            )
        return values
    if kind == "bool":
        lowered = np.array([v.lower() for v in values], dtype=object)
        truthy, falsy = np.isin(lowered, list(_TRUE)), np.isin(lowered, list(_FALSE))
        bad = ~(truthy | falsy)
        if bad.any():
            raise InvalidSubmissionError(
                f"column {name!r} must hold True or False",
                examples=_rows(bad, values, keys),
                fix="write True or False in every row",
            )
        return truthy
    numbers, not_number = _to_float(values)
    if not_number.any():
        empty = not_number & (values == "")
        rule = "has empty cells" if empty.all() else "has values that are not numbers"
        raise InvalidSubmissionError(
            f"column {name!r} {rule}",
            examples=_rows(not_number, values, keys),
            fix=f"write a number in every row of {name!r}",
        )
    non_finite = ~np.isfinite(numbers)
    if non_finite.any():
        raise InvalidSubmissionError(
            f"column {name!r} has NaN or infinite values",
            examples=_rows(non_finite, values, keys),
            fix="replace them with finite numbers",
        )
    if kind == "probability":
        outside = (numbers < 0) | (numbers > 1)
        if outside.any():
            raise InvalidSubmissionError(
                f"column {name!r} holds probabilities and must lie in [0, 1]",
                examples=_rows(outside, values, keys),
                fix="clip or rescale predictions into [0, 1]",
            )
    low, high = column.options.get("min"), column.options.get("max")
    if low is not None or high is not None:
        outside = (numbers < (low if low is not None else -np.inf)) | (numbers > (high if high is not None else np.inf))
        if outside.any():
            raise InvalidSubmissionError(
                f"column {name!r} must lie in [{low}, {high}]",
                examples=_rows(outside, values, keys),
                fix="clip predictions into that range",
            )
    if kind in ("int", "int_id"):
        fractional = numbers != np.round(numbers)
        if fractional.any():
            raise InvalidSubmissionError(
                f"column {name!r} must hold whole numbers",
                examples=_rows(fractional, values, keys),
                fix="round or cast the values to integers",
            )
        return numbers.astype(np.int64)
    return numbers


def check_columns(competition: Competition, frame: Frame) -> list[str]:
    """Raise if a declared column is missing; return warnings about ignored extra columns."""
    missing = [c for c in competition.column_names if c not in frame.columns]
    if missing:
        raise InvalidSubmissionError(
            f"missing column(s) {', '.join(map(repr, missing))}; found {', '.join(map(repr, frame.names))}",
            fix=f"use the header of the sample submission: {','.join(competition.column_names)}",
        )
    extra = [c for c in frame.names if c not in competition.column_names]
    return [f"ignored extra column(s): {', '.join(map(repr, extra))}"] if extra else []


def keys_of(frame: Frame, id_columns: Sequence[str]) -> np.ndarray:
    """One key per row: the id column itself, or the id columns joined."""
    if len(id_columns) == 1:
        return frame[id_columns[0]]
    parts = [frame[c].astype(str) for c in id_columns]
    joined = parts[0]
    for part in parts[1:]:
        joined = np.char.add(np.char.add(joined.astype(str), _KEY_SEP), part)
    return joined.astype(object)


@dataclass(frozen=True)
class Alignment:
    """Row orders that pair submission rows with answer rows, plus notes on ignored rows."""

    answer_order: np.ndarray
    submission_order: np.ndarray
    ignored_extra_rows: int


def _codes(keys: np.ndarray, vocabulary: pa.Array) -> np.ndarray:
    """Position of each key in ``vocabulary`` (-1 where absent)."""
    index = pc.index_in(pa.array(keys), value_set=vocabulary)
    return pc.fill_null(index, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def align(
    answer_keys: np.ndarray,
    submission_keys: np.ndarray,
    *,
    duplicate_ids: bool = False,
    extra_ids: bool = False,
    id_label: str = "id",
) -> Alignment:
    """Pair every answer row with exactly one submission row by key.

    ``duplicate_ids`` allows a key on several answer rows: the submission must then hold the same
    number of rows for that key, paired in file order. ``extra_ids`` ignores submission rows whose
    key is not among the answers (for competitions that accept them).
    """
    vocabulary = pc.unique(pa.array(answer_keys))
    answer_codes = _codes(answer_keys, vocabulary)
    sub_codes = _codes(submission_keys, vocabulary)
    extra = sub_codes < 0
    if extra.any() and not extra_ids:
        raise InvalidSubmissionError(
            f"{int(extra.sum())} row(s) have an {id_label} that is not in the test set",
            examples=list(submission_keys[extra][:5]),
            fix=f"keep exactly the {id_label} values of the sample submission",
        )
    n_keys = len(vocabulary)
    expected = np.bincount(answer_codes, minlength=n_keys)
    got = np.bincount(sub_codes[~extra], minlength=n_keys)
    vocab = vocabulary.to_numpy(zero_copy_only=False)
    if not duplicate_ids and (got > 1).any():
        dup = vocab[got > 1]
        raise InvalidSubmissionError(
            f"{len(dup)} {id_label} value(s) appear on more than one row",
            examples=list(dup[:5]),
            fix=f"write each {id_label} once",
        )
    missing = got < expected
    if missing.any():
        raise InvalidSubmissionError(
            f"{int((expected - got)[missing].sum())} test row(s) have no prediction (missing {id_label})",
            examples=list(vocab[missing][:5]),
            fix=f"write one row for every {id_label} of the sample submission",
        )
    surplus = got > expected
    if surplus.any():
        raise InvalidSubmissionError(
            f"{id_label} value(s) appear more often than in the test set",
            examples=list(vocab[surplus][:5]),
            fix=f"write each {id_label} as many times as the sample submission does",
        )
    kept = np.flatnonzero(~extra)
    return Alignment(
        answer_order=np.argsort(answer_codes, kind="stable"),
        submission_order=kept[np.argsort(sub_codes[kept], kind="stable")],
        ignored_extra_rows=int(extra.sum()),
    )

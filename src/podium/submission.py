"""The one submission check: columns, ids, types and value rules, then row alignment.

The same functions serve the validation endpoint (expected ids from the sample submission, no
answers in sight) and grading (expected ids from the answers). Every failure is an
:class:`InvalidSubmissionError` that names the rule, the first offending ids or rows, and the fix.

Text stays in Arrow arrays until a metric needs Python strings, so checking and aligning a
million-row submission costs a few vectorised passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from podium.competition import Column, Competition
from podium.errors import BrokenAnswersError, InvalidSubmissionError
from podium.published_reader import NA_MARKERS, NUMBER_OR_BOOL, pandas_text
from podium.table import Frame, from_numpy, strings, to_numpy

__all__ = [
    "Alignment",
    "Values",
    "align",
    "as_numpy",
    "check_columns",
    "convert_column",
    "keys_of",
    "numeric_columns",
    "take",
]

#: A converted column: an Arrow string array for text kinds, a numpy array for numbers and booleans.
Values: TypeAlias = pa.Array | pa.ChunkedArray | np.ndarray

_KEY_SEP = "\x1f"
_TRUE = strings(["true", "1", "1.0", "yes"])
_FALSE = strings(["false", "0", "0.0", "no"])
_RLE = r"^\s*(\d+\s+\d+(\s+\d+\s+\d+)*)?\s*$"
_TEXT_KINDS = frozenset({"id", "label", "text", "tokens", "boxes", "rle"})
_NA_MARKERS = strings(sorted(NA_MARKERS))


def _arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return from_numpy(np.asarray(values))


def as_numpy(values: Values) -> np.ndarray:
    """A converted column as numpy (object array of str for text)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return to_numpy(values)
    return values


def take(values: Values, order: np.ndarray) -> Values:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values.take(from_numpy(np.asarray(order, dtype=np.int64)))
    return values[order]


def _examples(mask: np.ndarray, values: pa.Array, keys: Values | None) -> list[str]:
    """Describe the first offending cells as 'row N (id X): value'."""
    out = []
    for i in np.flatnonzero(mask)[:5]:
        where = f"row {i + 2}"
        if keys is not None:
            key = keys[int(i)].as_py() if isinstance(keys, (pa.Array, pa.ChunkedArray)) else keys[i]
            where += f" (id {key})"
        out.append(f"{where}: {values[int(i)].as_py()!r}")
    return out


def _mask(array: pa.Array) -> np.ndarray:
    return to_numpy(array, fill=False)


def _to_float(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Parse text cells as float64; returns (numbers, mask of cells that are not numbers)."""
    try:
        return to_numpy(pc.cast(values, pa.float64())), np.zeros(len(values), bool)
    except pa.ArrowInvalid:
        pass
    cells = values.to_pylist()
    numbers = np.empty(len(cells))
    bad = np.zeros(len(cells), bool)
    for i, cell in enumerate(cells):
        try:
            numbers[i] = float(cell)
        except ValueError:
            numbers[i], bad[i] = np.nan, True
    return numbers, bad


def _fail(mask: np.ndarray, rule: str, fix: str, values: pa.Array, keys: Values | None) -> None:
    if mask.any():
        raise InvalidSubmissionError(rule, examples=_examples(mask, values, keys), fix=fix)


def convert_column(column: Column, values: Any, *, keys: Values | None = None) -> Values:
    """Convert one text column to its kind's values, or raise InvalidSubmissionError."""
    kind, name = column.kind, column.name
    raw = _arrow(values)
    if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):  # parsed while reading
        exact = pa.types.is_integer(raw.type) and not raw.null_count  # nulls: empty or NaN-like cells
        numbers = to_numpy(raw) if exact else to_numpy(pc.cast(raw, pa.float64()), fill=np.nan)
        return _check_numbers(column, numbers, raw, keys)
    if column.options.get("missing") == "invalid":
        _check_not_missing(column, raw, keys)
    if column.options.get("pandas_text"):
        return _as_pandas_reads(raw)
    if kind == "text":
        return raw
    text = pc.utf8_trim_whitespace(raw)
    if kind in _TEXT_KINDS:
        if kind == "rle":
            bad = ~_mask(pc.match_substring_regex(text, _RLE))
            empty_tokens = list(column.options.get("empty_tokens", ()))
            if empty_tokens:
                bad &= ~_mask(pc.is_in(text, value_set=strings(empty_tokens)))
            _fail(
                bad,
                f"column {name!r} must hold run-length encodings ('start length' pairs of positive integers)",
                "write space-separated start/length pairs, or an empty cell for an empty mask",
                raw,
                keys,
            )
        return text
    if kind == "bool":
        lowered = pc.utf8_lower(text)
        truthy = _mask(pc.is_in(lowered, value_set=_TRUE))
        bad = ~(truthy | _mask(pc.is_in(lowered, value_set=_FALSE)))
        _fail(bad, f"column {name!r} must hold True or False", "write True or False in every row", raw, keys)
        return truthy
    numbers, not_number = _to_float(text)
    if not_number.any():
        empty = _mask(pc.equal(text, ""))
        rule = "has empty cells" if (empty == not_number).all() else "has values that are not numbers"
        _fail(not_number, f"column {name!r} {rule}", f"write a number in every row of {name!r}", raw, keys)
    return _check_numbers(column, numbers, raw, keys)


def _check_not_missing(column: Column, raw: pa.Array | pa.ChunkedArray, keys: Values | None) -> None:
    """``missing: invalid``: the published grader reads these cells as NaN and cannot score them."""
    empty_tokens = list(column.options.get("empty_tokens", ()))
    fix = f"write a prediction in every row of {column.name!r}"
    if empty_tokens:
        fix += f" ({empty_tokens[0]!r} for an empty mask)"
    _fail(
        _mask(pc.is_in(raw, value_set=_NA_MARKERS)),
        f"column {column.name!r} has empty cells or missing-value markers (NA, NaN, null, None, ...), "
        "which the published grader cannot score",
        fix,
        raw,
        keys,
    )


def _as_pandas_reads(raw: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``pandas_text: true``: the cells as the published grader's pandas read and ``astype(str)``
    give them (untrimmed; missing cells become "nan"; see :mod:`podium.published_reader`)."""
    array = raw.combine_chunks() if isinstance(raw, pa.ChunkedArray) else raw
    missing = pc.is_in(array, value_set=_NA_MARKERS)

    def has_text(cells: pa.Array, missing: pa.Array) -> bool:
        return not _mask(pc.or_(missing, pc.match_substring_regex(cells, NUMBER_OR_BOOL))).all()

    if has_text(array[:1000], missing[:1000]) or has_text(array, missing):  # one cell of plain text
        return pc.if_else(missing, pa.scalar("nan"), array)  # makes a text column
    return strings(pandas_text(array.to_pylist()))  # every cell a number, a boolean or missing


def _check_numbers(column: Column, numbers: np.ndarray, raw: Any, keys: Values | None) -> np.ndarray:
    """The value rules of numeric kinds: finite, ranges, whole numbers."""
    kind, name = column.kind, column.name
    _fail(
        ~np.isfinite(numbers),
        f"column {name!r} has NaN, empty or infinite values",
        "write a finite number in every row",
        raw,
        keys,
    )
    if kind == "probability":
        _fail(
            (numbers < 0) | (numbers > 1),
            f"column {name!r} holds probabilities and must lie in [0, 1]",
            "clip or rescale predictions into [0, 1]",
            raw,
            keys,
        )
    low, high = column.options.get("min"), column.options.get("max")
    if low is not None or high is not None:
        lo = -np.inf if low is None else low
        hi = np.inf if high is None else high
        _fail(
            (numbers < lo) | (numbers > hi),
            f"column {name!r} must lie in [{low}, {high}]",
            "clip predictions into that range",
            raw,
            keys,
        )
    if kind in ("int", "int_id"):
        _fail(
            numbers != np.round(numbers),
            f"column {name!r} must hold whole numbers",
            "round or cast the values to integers",
            raw,
            keys,
        )
        return numbers.astype(np.int64)
    return numbers


_ARROW_NUMERIC = {"float": "float", "probability": "float", "int": "int", "int_id": "int"}


def numeric_columns(columns: Sequence[Column]) -> dict[str, str]:
    """Columns a reader may parse as numbers while reading: name -> "float" or "int"."""
    return {c.name: _ARROW_NUMERIC[c.kind] for c in columns if c.kind in _ARROW_NUMERIC}


def check_columns(competition: Competition, frame: Frame) -> list[str]:
    """Raise if a declared column is missing; return warnings about ignored extra columns."""
    missing = [c for c in competition.column_names if c not in frame.names]
    if missing:
        raise InvalidSubmissionError(
            f"missing column(s) {', '.join(map(repr, missing))}; found {', '.join(map(repr, frame.names))}",
            fix=f"use the header of the sample submission: {','.join(competition.column_names)}",
        )
    extra = [c for c in frame.names if c not in competition.column_names]
    if extra and competition.matching.get("extra_columns") is False:
        raise InvalidSubmissionError(
            f"unexpected column(s) {', '.join(map(repr, extra))}; the published grader accepts only the sample submission's columns",
            fix=f"write exactly the columns {','.join(competition.column_names)} (no index column)",
        )
    return [f"ignored extra column(s): {', '.join(map(repr, extra))}"] if extra else []


def keys_of(columns: dict[str, Values], id_columns: Sequence[str]) -> pa.Array:
    """One key per row: the id column itself, or the id columns joined."""
    parts = [_arrow(columns[c]) for c in id_columns]
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*[pc.cast(p, pa.string()) for p in parts], _KEY_SEP)


@dataclass(frozen=True)
class Alignment:
    """Row orders that pair submission rows with answer rows, plus notes on ignored rows."""

    answer_order: np.ndarray
    submission_order: np.ndarray
    ignored_extra_rows: int


def _codes(keys: pa.Array, vocabulary: pa.Array) -> np.ndarray:
    """Position of each key in ``vocabulary`` (-1 where absent)."""
    index = pc.index_in(keys, value_set=vocabulary)
    return to_numpy(pc.cast(index, pa.int64()), fill=-1)


def _sorted_match(answer_keys: pa.Array, submission_keys: pa.Array) -> Alignment | None:
    """The common case in one sort each: the same keys, each once, in any order."""
    if len(answer_keys) != len(submission_keys):
        return None
    integer = all(k.type == pa.int64() and k.null_count == 0 for k in (answer_keys, submission_keys))
    if integer:  # numpy's sort is ~3x faster than Arrow's sort_indices on large integer keys
        a_values, s_values = to_numpy(answer_keys), to_numpy(submission_keys)
        a_idx, s_idx = np.argsort(a_values), np.argsort(s_values)
        a_int = a_values[a_idx]
        if not np.array_equal(a_int, s_values[s_idx]):
            return None
        if a_int.size > 1 and bool(np.any(a_int[1:] == a_int[:-1])):
            return None  # repeated keys: the thorough path pairs them in file order
        return Alignment(a_idx.astype(np.int64), s_idx.astype(np.int64), 0)
    a_order = pc.sort_indices(answer_keys)
    s_order = pc.sort_indices(submission_keys)
    a_sorted = answer_keys.take(a_order)
    if not pc.all(pc.equal(a_sorted, submission_keys.take(s_order))).as_py():
        return None
    if len(a_sorted) > 1 and pc.any(pc.equal(a_sorted[1:], a_sorted[:-1])).as_py():
        return None  # repeated keys: the thorough path pairs them in file order
    return Alignment(to_numpy(a_order), to_numpy(s_order), 0)


def align(
    answer_keys: Values,
    submission_keys: Values,
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
    answer_keys, submission_keys = _arrow(answer_keys), _arrow(submission_keys)
    if answer_keys.type != submission_keys.type:
        submission_keys = pc.cast(submission_keys, answer_keys.type)
    fast = _sorted_match(answer_keys, submission_keys)
    if fast is not None:
        return fast
    vocabulary = pc.unique(answer_keys)
    answer_codes = _codes(answer_keys, vocabulary)
    sub_codes = _codes(submission_keys, vocabulary)
    extra = sub_codes < 0
    if extra.any() and not extra_ids:
        raise InvalidSubmissionError(
            f"{int(extra.sum())} row(s) have an {id_label} that is not in the test set",
            examples=[str(k) for k in submission_keys.filter(from_numpy(extra)).slice(0, 5).to_pylist()],
            fix=f"keep exactly the {id_label} values of the sample submission",
        )
    n_keys = len(vocabulary)
    expected = np.bincount(answer_codes, minlength=n_keys)
    got = np.bincount(sub_codes[~extra], minlength=n_keys)

    def named(mask: np.ndarray) -> list[str]:
        return [str(k) for k in vocabulary.filter(from_numpy(mask)).slice(0, 5).to_pylist()]

    if not duplicate_ids and (expected > 1).any():
        raise BrokenAnswersError(
            f"the expected rows repeat {id_label} values {named(expected > 1)}; the prepared data is broken"
        )
    if not duplicate_ids and (got > 1).any():
        raise InvalidSubmissionError(
            f"{int((got > 1).sum())} {id_label} value(s) appear on more than one row",
            examples=named(got > 1),
            fix=f"write each {id_label} once",
        )
    missing = got < expected
    if missing.any():
        raise InvalidSubmissionError(
            f"{int((expected - got)[missing].sum())} test row(s) have no prediction (missing {id_label})",
            examples=named(missing),
            fix=f"write one row for every {id_label} of the sample submission",
        )
    surplus = got > expected
    if surplus.any():
        raise InvalidSubmissionError(
            f"{id_label} value(s) appear more often than in the test set",
            examples=named(surplus),
            fix=f"write each {id_label} as many times as the sample submission does",
        )
    kept = np.flatnonzero(~extra)
    return Alignment(
        answer_order=np.argsort(answer_codes, kind="stable"),
        submission_order=kept[np.argsort(sub_codes[kept], kind="stable")],
        ignored_extra_rows=int(extra.sum()),
    )

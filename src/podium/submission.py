"""The one submission check: columns, ids, types and value rules, then row alignment.

The same functions serve the validation endpoint (expected ids from the sample submission, no
answers in sight) and grading (expected ids from the answers). Every failure is an
:class:`InvalidSubmissionError` that names the rule, the first offending ids or rows, and the fix.

Text stays in Arrow arrays until a metric needs Python strings, so checking and aligning a
million-row submission costs a few vectorised passes.

What a number is (one definition for every reader, check and message):

- Decimal notation in ASCII: an optional sign (``+`` or ``-``), digits with an optional decimal
  point (``1``, ``1.``, ``.5``, ``00012``), an optional exponent (``1e-3``, ``2E+5``). Spaces
  and tabs around it are ignored; nothing else is: no hex (``0x10``), no digit separators
  (``1_0``, ``1,000``), no other digits (Arabic-Indic or full-width digits), no
  non-breaking or other Unicode spaces. Such cells "are not numbers".
- ``nan``, ``inf`` and ``infinity`` (any case, optionally signed) are numbers that are not
  finite, as is a decimal too large for a float64 (``1e999``): every numeric kind rejects them
  ("NaN, empty or infinite values"). An empty cell is "empty".
- ``int`` and ``int_id`` columns are exact: digits are read as 64-bit integers (beyond that range
  a cell is rejected, never rounded); a whole number written with a decimal point or exponent
  (``4.0``, ``1e3``) is accepted below 2^53, where floats are still exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from podium.competition import Column, Competition
from podium.errors import BrokenAnswersError, InvalidSubmissionError, quote, shorten
from podium.published_reader import NA_MARKERS, NUMBER_OR_BOOL, pandas_text
from podium.table import Frame, from_numpy, strings, to_numpy

__all__ = [
    "MAX_CELL_CHARS",
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
_NUMBER_SPACE = " \t"  # what may surround a number (what Arrow's CSV reader trims)
_DECIMAL = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?"
_NUMBER = rf"(?i)^({_DECIMAL}|[+-]?(nan|inf|infinity))$"  # what Arrow's float parser reads, less nan(...)
_DIGITS = r"^[+-]?[0-9]+$"
_EXACT = 2**53  # floats below this are exact integers; from here on, neighbours collapse
#: The longest cell (in characters) each kind accepts; a column may set its own ``max_chars``.
#: Kinds not listed (numbers, ids, RLE) are bounded by the size cap on the file only.
MAX_CELL_CHARS = {"label": 1_000, "tokens": 100_000, "text": 100_000, "boxes": 1_000_000}


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


def _examples(mask: np.ndarray, values: Values, keys: Values | None) -> list[str]:
    """Describe the first offending cells as 'row N (id X): value', values cut short."""
    out = []
    for i in np.flatnonzero(mask)[:5]:
        where = f"row {i + 2}"
        if keys is not None:
            key = keys[int(i)].as_py() if isinstance(keys, (pa.Array, pa.ChunkedArray)) else keys[i]
            where += f" (id {shorten(str(key))})"
        value = values[int(i)].as_py() if isinstance(values, (pa.Array, pa.ChunkedArray)) else values[int(i)]
        out.append(f"{where}: {quote(value)}")
    return out


def _mask(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return to_numpy(array, fill=False)


def _matches(text: pa.Array | pa.ChunkedArray, pattern: str) -> np.ndarray:
    return _mask(pc.match_substring_regex(text, pattern))


def _fail(mask: np.ndarray, rule: str, fix: str, values: Values, keys: Values | None) -> None:
    if mask.any():
        raise InvalidSubmissionError(rule, examples=_examples(mask, values, keys), fix=fix)


@dataclass
class _Numbers:
    """Cells read as numbers: values, and the masks of the cells each rule refuses."""

    values: np.ndarray
    not_number: np.ndarray  # empty, or not a number at all
    not_finite: np.ndarray  # nan, inf, or too large for a float64
    too_large: np.ndarray | None = None  # int kinds: beyond the exact range
    fraction: np.ndarray | None = None  # int kinds: not a whole number


def _read_floats(text: pa.Array | pa.ChunkedArray) -> _Numbers:
    """Parse trimmed text cells as float64 by the one definition of a number (module docstring)."""
    n = len(text)
    try:  # one vectorised pass in the common case; Arrow reads the grammar plus nan/inf words
        values = to_numpy(pc.cast(text, pa.float64()))
        not_number = np.zeros(n, bool)
    except pa.ArrowInvalid:
        number = _matches(text, _NUMBER)
        values = np.full(n, np.nan)
        values[number] = to_numpy(pc.cast(text.filter(from_numpy(number)), pa.float64()))
        not_number = ~number
    not_finite = ~np.isfinite(values) & ~not_number
    if not_finite.any():  # Arrow also reads 'nan(...)': only the words above are numbers
        odd = np.flatnonzero(not_finite)
        word = _matches(text.take(from_numpy(odd.astype(np.int64))), _NUMBER)
        not_number[odd[~word]] = True
        not_finite[odd[~word]] = False
    return _Numbers(values, not_number, not_finite)


def _read_ints(text: pa.Array | pa.ChunkedArray) -> _Numbers:
    """Parse trimmed text cells as exact int64: digits exactly, decimals when whole and exact."""
    n = len(text)
    zeros = np.zeros(n, bool)
    if not pc.any(pc.match_substring(text, "x", ignore_case=True)).as_py():  # Arrow's ints take hex
        try:
            return _Numbers(to_numpy(pc.cast(text, pa.int64())), zeros, zeros, zeros, zeros)
        except pa.ArrowInvalid:
            pass
    digits = _matches(text, _DIGITS)
    values = np.zeros(n, np.int64)
    too_large, fraction = zeros.copy(), zeros.copy()
    numbers = _Numbers(values, zeros.copy(), zeros.copy(), too_large, fraction)
    at = np.flatnonzero(digits)
    if at.size:
        cells = pc.utf8_ltrim(text.filter(from_numpy(digits)), "+")
        try:
            values[at] = to_numpy(pc.cast(cells, pa.int64()))
        except pa.ArrowInvalid:  # beyond the 64-bit range: find which cells
            parsed = [int(cell) for cell in cells.to_pylist()]
            fits = np.array([-(2**63) <= v < 2**63 for v in parsed], bool)
            values[at[fits]] = [v for v, ok in zip(parsed, fits.tolist(), strict=True) if ok]
            too_large[at[~fits]] = True
    others = np.flatnonzero(~digits)
    if others.size:
        rest = _read_floats(text.filter(from_numpy(~digits)))
        numbers.not_number[others] = rest.not_number
        numbers.not_finite[others] = rest.not_finite
        floats = np.where(np.isfinite(rest.values), rest.values, 0.0)
        big = np.abs(floats) >= _EXACT  # 2^53 + 1 reads as 2^53: not exact
        too_large[others[big]] = True
        floats[big] = 0.0
        fraction[others] = floats != np.round(floats)
        values[others] = floats.astype(np.int64)
    return numbers


def _check_length(column: Column, text: pa.Array | pa.ChunkedArray, raw: Values, keys: Values | None) -> None:
    limit = column.options.get("max_chars", MAX_CELL_CHARS.get(column.kind))
    if limit is None or not len(text):
        return
    lengths = pc.utf8_length(text)
    if pc.max(lengths).as_py() > limit:
        _fail(
            _mask(pc.greater(lengths, limit)),
            f"column {column.name!r} has cells longer than {int(limit):,} characters",
            f"keep every cell of {column.name!r} under {int(limit):,} characters",
            raw,
            keys,
        )


def convert_column(column: Column, values: Any, *, keys: Values | None = None, cell_caps: bool = True) -> Values:
    """Convert one text column to its kind's values, or raise InvalidSubmissionError.

    ``cell_caps`` applies the longest-cell rule of text kinds (:data:`MAX_CELL_CHARS`), which
    bounds what a submission can make a metric do; podium's own answers are read without it.
    """
    kind, name = column.kind, column.name
    raw = _arrow(values)
    if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):  # parsed while reading
        return _check_typed(column, raw, keys)
    if column.options.get("missing") == "invalid":
        _check_not_missing(column, raw, keys)
    if column.options.get("pandas_text"):
        if cell_caps:
            _check_length(column, raw, raw, keys)
        return _as_pandas_reads(raw)
    if kind == "text":
        if cell_caps:
            _check_length(column, raw, raw, keys)
        return raw
    if kind in _TEXT_KINDS:
        text = pc.utf8_trim_whitespace(raw)
        if cell_caps:
            _check_length(column, text, raw, keys)
        if kind == "boxes" and column.options.get("empty") == "invalid":
            _fail(
                _mask(pc.equal(text, "")),
                f"column {name!r} has empty cells, which the published grader cannot score",
                "write at least one object in every row (see the sample submission)",
                raw,
                keys,
            )
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
        lowered = pc.utf8_lower(pc.utf8_trim_whitespace(raw))
        truthy = _mask(pc.is_in(lowered, value_set=_TRUE))
        bad = ~(truthy | _mask(pc.is_in(lowered, value_set=_FALSE)))
        _fail(bad, f"column {name!r} must hold True or False", "write True or False in every row", raw, keys)
        return truthy
    text = pc.utf8_trim(raw, _NUMBER_SPACE)
    numbers = _read_ints(text) if kind in ("int", "int_id") else _read_floats(text)
    if numbers.not_number.any():
        empty = _mask(pc.equal(text, ""))
        rule = "has empty cells" if (empty == numbers.not_number).all() else "has values that are not numbers"
        _fail(numbers.not_number, f"column {name!r} {rule}", f"write a number in every row of {name!r}", raw, keys)
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


def _check_typed(column: Column, raw: pa.Array | pa.ChunkedArray, keys: Values | None) -> np.ndarray:
    """A column parsed while reading (nulls: empty or NaN-like cells). Exact for integers."""
    null = ~_mask(pc.is_valid(raw)) if raw.null_count else np.zeros(len(raw), bool)
    if pa.types.is_integer(raw.type):
        values = to_numpy(raw, fill=0).astype(np.int64)
        zeros = np.zeros(len(raw), bool)
        return _check_numbers(column, _Numbers(values, null, zeros, zeros, zeros), raw, keys)
    if column.kind in ("int", "int_id"):  # integers read as floats: exact below 2^53 only
        return _check_numbers(column, _float_ints(raw), raw, keys)
    values = to_numpy(pc.cast(raw, pa.float64()), fill=np.nan)
    return _check_numbers(column, _Numbers(values, np.zeros(len(raw), bool), ~np.isfinite(values)), raw, keys)


def _float_ints(raw: pa.Array | pa.ChunkedArray) -> _Numbers:
    """Integers that the reader parsed as float64: exact when whole, finite and below 2^53."""
    zeros = np.zeros(len(raw), bool)
    if not raw.null_count:
        try:  # Arrow's safe cast refuses fractions, NaN and infinities; chunk by chunk, no temporaries
            ints, at = np.empty(len(raw), np.int64), 0
            for chunk in raw.chunks if isinstance(raw, pa.ChunkedArray) else [raw]:
                ints[at : at + len(chunk)] = to_numpy(pc.cast(chunk, pa.int64()))
                at += len(chunk)
            if not ints.size or (ints.min() > -_EXACT and ints.max() < _EXACT):
                return _Numbers(ints, zeros, zeros, zeros, zeros)
        except pa.ArrowInvalid:
            pass
    values = to_numpy(pc.cast(raw, pa.float64()), fill=np.nan)
    finite = np.where(np.isfinite(values), values, 0.0)
    return _Numbers(values, zeros, ~np.isfinite(values), np.abs(finite) >= _EXACT, finite != np.round(finite))


def _check_numbers(column: Column, numbers: _Numbers, raw: Any, keys: Values | None) -> np.ndarray:
    """The value rules of numeric kinds: finite, ranges, whole numbers."""
    kind, name = column.kind, column.name
    values = numbers.values
    _fail(
        numbers.not_number | numbers.not_finite,
        f"column {name!r} has NaN, empty or infinite values",
        "write a finite number in every row",
        raw,
        keys,
    )
    if numbers.too_large is not None:
        _fail(
            numbers.too_large,
            f"column {name!r} holds whole numbers too large to read exactly "
            "(beyond the 64-bit range, or beyond 2^53 with a decimal point or exponent)",
            "write integers as plain digits within the 64-bit range",
            raw,
            keys,
        )
    if kind in ("int", "int_id"):
        _fail(
            values != np.round(values) if numbers.fraction is None else numbers.fraction,
            f"column {name!r} must hold whole numbers",
            "round or cast the values to integers",
            raw,
            keys,
        )
        values = values.astype(np.int64, copy=False)
    if kind == "probability":
        _fail(
            (values < 0) | (values > 1),
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
            (values < lo) | (values > hi),
            f"column {name!r} must lie in [{low}, {high}]",
            "clip predictions into that range",
            raw,
            keys,
        )
    return values


_ARROW_NUMERIC = {"float": "float", "probability": "float", "int": "int", "int_id": "int"}


def numeric_columns(columns: Sequence[Column], *, submission: bool = False) -> dict[str, str]:
    """Columns a reader may parse as numbers while reading: name -> "float" or "int".

    A submission (``submission=True``) has its integer columns parsed as floats too: Arrow's
    integer parser also reads hex (``0x10``), which is no number here, while its float parser reads
    exactly the definition of a number (plus nan/inf, which the check refuses). A float is an exact
    integer below 2^53; a cell beyond that, or empty, NaN-like or fractional, sends the column back
    to its text (:meth:`podium.table.Frame.text`), which :func:`convert_column` reads exactly.
    """
    return {c.name: "float" if submission else _ARROW_NUMERIC[c.kind] for c in columns if c.kind in _ARROW_NUMERIC}


def _names(names: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(quote(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_columns(competition: Competition, frame: Frame) -> list[str]:
    """Raise if a declared column is missing; return warnings about ignored extra columns."""
    missing = [c for c in competition.column_names if c not in frame.names]
    if missing:
        raise InvalidSubmissionError(
            f"missing column(s) {_names(missing)}; found {_names(frame.names)}",
            fix=f"use the header of the sample submission: {','.join(competition.column_names)}",
        )
    extra = [c for c in frame.names if c not in competition.column_names]
    if extra and competition.matching.get("extra_columns") is False:
        raise InvalidSubmissionError(
            f"unexpected column(s) {_names(extra)}; the published grader accepts only the sample submission's columns",
            fix=f"write exactly the columns {','.join(competition.column_names)} (no index column)",
        )
    return [f"ignored extra column(s): {_names(extra)}"] if extra else []


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


def _first_keys(keys: pa.Array | pa.ChunkedArray, k: int = 5) -> list[str]:
    """The ``k`` smallest keys, as text cut short (the examples of an id rule)."""
    first = keys.take(pc.select_k_unstable(keys, k, [("key", "ascending")])) if len(keys) else keys
    return [shorten(str(key)) for key in first.to_pylist()]


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
    # Examples name ids in sorted order, so a message does not depend on the order of the expected
    # rows (validation takes them from the sample submission, grading from the answers).
    if fast is not None:
        return fast
    vocabulary = pc.unique(answer_keys)
    answer_codes = _codes(answer_keys, vocabulary)
    sub_codes = _codes(submission_keys, vocabulary)
    extra = sub_codes < 0
    if extra.any() and not extra_ids:
        raise InvalidSubmissionError(
            f"{int(extra.sum())} row(s) have an {id_label} that is not in the test set",
            examples=_first_keys(submission_keys.filter(from_numpy(extra))),
            fix=f"keep exactly the {id_label} values of the sample submission",
        )
    n_keys = len(vocabulary)
    expected = np.bincount(answer_codes, minlength=n_keys)
    got = np.bincount(sub_codes[~extra], minlength=n_keys)

    def named(mask: np.ndarray) -> list[str]:
        return _first_keys(vocabulary.filter(from_numpy(mask)))

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

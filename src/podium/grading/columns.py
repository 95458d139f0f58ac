"""One column's cells, read as its kind says and checked against its value rules.

Part of the one submission check (:mod:`podium.grading.check`), shared by validation and grading.
Every failure is an :class:`InvalidSubmissionError` that names the rule, the first offending ids or
rows, and the fix. Text stays in Arrow arrays until a metric needs Python strings, so checking a
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

from podium.competition import Column
from podium.errors import InvalidSubmissionError, quote, shorten
from podium.grading.published import NA_MARKERS, NUMBER_OR_BOOL, pandas_text
from podium.grading.table import from_numpy, strings, to_numpy

__all__ = ["MAX_CELL_CHARS", "Values", "arrow", "as_numpy", "convert_column", "numeric_columns", "take"]

#: A converted column: an Arrow string array for text kinds, a numpy array for numbers and booleans.
Values: TypeAlias = pa.Array | pa.ChunkedArray | np.ndarray

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
_INT64_DIGITS = 19  # digits of the largest 64-bit integer (9223372036854775807)
#: The longest cell (in characters) each kind accepts; a column may set its own ``max_chars``.
#: Kinds not listed (numbers, ids, RLE) are bounded by the size cap on the file only.
MAX_CELL_CHARS = {"label": 1_000, "tokens": 100_000, "text": 100_000, "boxes": 1_000_000}


def arrow(values: Any) -> pa.Array | pa.ChunkedArray:
    """A column as Arrow (numbers through buffers, anything else as text)."""
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
            # More than 19 significant digits never fit, and Python refuses to parse a cell of
            # thousands: only the short ones are read as Python ints.
            short = to_numpy(pc.utf8_length(pc.utf8_ltrim(pc.utf8_ltrim(cells, "-"), "0"))) <= _INT64_DIGITS
            parsed = [int(cell) for cell in cells.filter(from_numpy(short)).to_pylist()]
            fits = short.copy()
            fits[short] = [-(2**63) <= v < 2**63 for v in parsed]
            values[at[fits]] = [v for v in parsed if -(2**63) <= v < 2**63]
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
    raw = arrow(values)
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
        if column.options.get("separator") == "single_space":
            _fail(
                _mask(pc.and_(pc.not_equal(text, ""), pc.match_substring_regex(raw, r"^\s|\s$|\s\s|[^\S ]"))),
                f"column {name!r} must separate its items by single spaces, as the published grader splits them",
                "join the items with one space each, with no space before the first or after the last",
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
    to its text (:meth:`podium.grading.table.Frame.text`), which :func:`convert_column` reads exactly.
    """
    return {c.name: "float" if submission else _ARROW_NUMERIC[c.kind] for c in columns if c.kind in _ARROW_NUMERIC}

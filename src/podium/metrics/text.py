"""Text metrics: edit distances and word overlap between string cells.

Also home of :func:`encode_tokens`, the whitespace tokeniser shared with ``ranking``. Only numpy
is imported at module level; rapidfuzz is imported by the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt

from podium.errors import InvalidSubmissionError, quote
from podium.metrics._common import IntArray, StrArray, mean_or_nan, unique

__all__ = ["mean_levenshtein", "mean_word_jaccard", "normalized_sequence_levenshtein"]


def check_rows(y_true: npt.NDArray[Any], y_pred: npt.NDArray[Any]) -> None:
    """Raise ValueError unless both arrays have the same number of rows."""
    n_true, n_pred = len(y_true), len(y_pred)
    if n_true != n_pred:
        raise ValueError(f"row counts differ: {n_true} answers, {n_pred} predictions")


@dataclass(frozen=True)
class TokenTable:
    """The whitespace tokens of a column of cells, flattened in row order.

    ``codes[i]`` is the vocabulary code of token ``i`` (comparable between tables encoded in one
    :func:`encode_tokens` call) and ``rows[i]`` the row it came from; ``counts`` holds the number
    of tokens of each row.
    """

    codes: IntArray
    rows: IntArray
    counts: IntArray

    @property
    def positions(self) -> IntArray:
        """0-based position of each token within its row."""
        starts = np.cumsum(self.counts) - self.counts
        return np.arange(self.codes.size) - starts[self.rows]

    def keys(self, vocabulary_size: int) -> IntArray:
        """One integer per (row, token) pair, unique across rows."""
        return self.rows * vocabulary_size + self.codes


def encode_tokens(
    *columns: StrArray, lower: bool = False, separator: str | None = None
) -> tuple[list[TokenTable], int]:
    """Split every cell on whitespace and code the tokens with one shared vocabulary.

    Returns one :class:`TokenTable` per column and the vocabulary size (at least 1, so that it
    can serve as the modulus of :meth:`TokenTable.keys`). String comparison is exact (after
    ``str.lower`` when ``lower``). With a ``separator`` cells are split on exactly that string
    (``str.split(separator)``), so a doubled, leading or trailing separator makes an empty token
    and an empty cell is one empty token.
    """
    cells_of = [[cell.lower() for cell in column] if lower else column for column in columns]
    fast = _encode_ascii(cells_of) if separator is None else _encode_split(cells_of, separator)
    if fast is not None:
        return fast
    vocabulary: dict[str, int] = {}
    tables = []
    for cells in cells_of:
        split = [cell.split(separator) for cell in cells]
        counts = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        total = int(counts.sum())
        codes = np.fromiter(
            (vocabulary.setdefault(token, len(vocabulary)) for token in chain.from_iterable(split)),
            dtype=np.int64,
            count=total,
        )
        rows = np.repeat(np.arange(len(split), dtype=np.int64), counts)
        tables.append(TokenTable(codes=codes, rows=rows, counts=counts))
    return tables, max(len(vocabulary), 1)


def _encode_ascii(columns: list[Any]) -> tuple[list[TokenTable], int] | None:
    """:func:`encode_tokens` in Arrow, for columns of ASCII text (None when a cell is not such text).

    Only ASCII text: there Arrow's whitespace (space, ``\\t\\n\\v\\f\\r``) is Python's ``str.split``
    whitespace, once the separators ``\\x1c``-``\\x1f`` (whitespace to Python alone) are ruled out.
    Arrow's dictionary encoding numbers tokens in first-appearance order, as the Python path does.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from podium.arrow import from_numpy, strings, to_numpy

    try:
        arrays = [strings(list(column)) for column in columns]
    except (AttributeError, TypeError):  # a cell that is not a str: the Python path says what is wrong
        return None
    for array in arrays:
        if len(array) and (
            not pc.all(pc.string_is_ascii(array)).as_py()
            or pc.any(pc.match_substring_regex(array, "[\\x1c-\\x1f]")).as_py()
        ):
            return None
    # Arrow keeps an empty token for leading or trailing whitespace and for an empty cell: trim, split,
    # then drop the one empty token each empty cell is left with.
    trimmed = [pc.ascii_trim_whitespace(array) for array in arrays]
    splits = [pc.ascii_split_whitespace(array) for array in trimmed]
    tokens = pa.concat_arrays([pc.list_flatten(split) for split in splits])
    tokens = pc.filter(
        tokens, from_numpy(to_numpy(pc.binary_length(tokens)) > 0)
    )  # no Python scalars: they import pandas
    encoded = pc.dictionary_encode(tokens)
    codes = to_numpy(encoded.indices).astype(np.int64)
    tables, start = [], 0
    for split, cells in zip(splits, trimmed, strict=True):
        empty = (to_numpy(pc.binary_length(cells)) == 0).astype(np.int64)
        counts = to_numpy(pc.list_value_length(split)).astype(np.int64) - empty
        total = int(counts.sum())
        rows = np.repeat(np.arange(len(split), dtype=np.int64), counts)
        tables.append(TokenTable(codes=codes[start : start + total], rows=rows, counts=counts))
        start += total
    return tables, max(len(encoded.dictionary), 1)


def _encode_split(columns: list[Any], separator: str) -> tuple[list[TokenTable], int] | None:
    """:func:`encode_tokens` with a ``separator``, in Arrow: ``split_pattern`` on a literal splits
    as ``str.split(separator)`` does, empty tokens included (None when a cell is not a str)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from podium.arrow import strings, to_numpy

    try:
        splits = [pc.split_pattern(strings(list(column)), pattern=separator) for column in columns]
    except (AttributeError, TypeError):
        return None
    encoded = pc.dictionary_encode(pa.concat_arrays([pc.list_flatten(split) for split in splits]))
    codes = to_numpy(encoded.indices).astype(np.int64)
    tables, start = [], 0
    for split in splits:
        counts = to_numpy(pc.list_value_length(split)).astype(np.int64)
        total = int(counts.sum())
        rows = np.repeat(np.arange(len(split), dtype=np.int64), counts)
        tables.append(TokenTable(codes=codes[start : start + total], rows=rows, counts=counts))
        start += total
    return tables, max(len(encoded.dictionary), 1)


def mean_levenshtein(y_true: StrArray, y_pred: StrArray) -> float:
    """Mean character-level Levenshtein distance per row.

    Used by billion-word-imputation and bms-molecular-translation (python-Levenshtein
    ``distance``; computed here with rapidfuzz).
    """
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist

    check_rows(y_true, y_pred)
    distances = cpdist(list(y_true), list(y_pred), scorer=Levenshtein.distance, workers=-1)
    return mean_or_nan(distances)


def _is_int(token: str) -> bool:
    if not token.isascii() or "_" in token:  # ASCII digits only, as a number is defined everywhere
        return False
    try:
        int(token)
    except ValueError:
        return False
    return True


def _int_sequences(cells: StrArray, *, submitted: bool) -> list[list[int]]:
    """Each cell's whitespace-separated integers; a non-integer token is an error."""
    split = [cell.split() for cell in cells]
    try:
        joined = "".join(chain.from_iterable(split))
        if not joined.isascii() or "_" in joined:
            raise ValueError("not plain ASCII integers")
        return [[int(token) for token in tokens] for tokens in split]
    except ValueError:
        bad = [
            f"row {row}: {quote(token)}" for row, tokens in enumerate(split) for token in tokens if not _is_int(token)
        ]
        if not submitted:
            raise ValueError(f"answers hold non-integer tokens: {bad[:5]}") from None
        raise InvalidSubmissionError(
            "every token of a sequence must be an integer",
            examples=bad,
            fix="write each sequence as integers separated by spaces, e.g. '3 17 5'",
        ) from None


def normalized_sequence_levenshtein(y_true: StrArray, y_pred: StrArray) -> float:
    """Total Levenshtein distance between integer sequences / total number of true elements.

    multi-modal-gesture-recognition: cells are whitespace-separated integers, edits count
    elements (not characters). NaN when the answers hold no element at all.
    """
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist

    check_rows(y_true, y_pred)
    true = _int_sequences(y_true, submitted=False)
    pred = _int_sequences(y_pred, submitted=True)
    total = sum(map(len, true))
    if total == 0:
        return float("nan")
    distances = cpdist(true, pred, scorer=Levenshtein.distance, workers=-1)
    return float(np.sum(distances, dtype=np.int64)) / total


def mean_word_jaccard(y_true: StrArray, y_pred: StrArray, *, both_empty: float = 0.0) -> float:
    """Mean over rows of the Jaccard index of lowercased whitespace-split word sets.

    chaii-hindi-and-tamil-question-answering (sklearn ``jaccard_score(average="samples")``,
    where a row with both sets empty scores 0) and tweet-sentiment-extraction (where such a row
    breaks the upstream grader). A row with both sets empty scores ``both_empty``.
    """
    check_rows(y_true, y_pred)
    (true, pred), size = encode_tokens(y_true, y_pred, lower=True)
    true_keys = unique(true.keys(size))
    pred_keys = unique(pred.keys(size))
    n = len(y_true)
    true_words, pred_words, common = (
        np.bincount(keys // size, minlength=n)
        for keys in (true_keys, pred_keys, true_keys[np.isin(true_keys, pred_keys)])
    )
    union = true_words + pred_words - common
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(union > 0, common / union, both_empty)
    return mean_or_nan(scores)

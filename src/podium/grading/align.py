"""Pairing a submission's rows with the expected rows: by key (:func:`align`), or, where a version
reproduces a published grader that trusts row order, by position (:func:`align_published`).

The expected keys are the answers' (grading) or the sample submission's (validation). Messages name
offending ids in sorted order, so they do not depend on the order of the expected rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from podium.errors import BrokenAnswersError, InvalidSubmissionError, shorten
from podium.grading.columns import Values, arrow
from podium.grading.quicksort import quicksort_argsort
from podium.grading.table import from_numpy, to_numpy

__all__ = ["Alignment", "align", "align_published", "keys_of", "pandas_sort_order"]

_KEY_SEP = "\x1f"
_INTEGER = r"^\s*[+-]?[0-9]+\s*$"


def keys_of(columns: dict[str, Values], id_columns: Sequence[str]) -> pa.Array:
    """One key per row: the id column itself, or the id columns joined."""
    parts = [arrow(columns[c]) for c in id_columns]
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
    answer_keys, submission_keys = arrow(answer_keys), arrow(submission_keys)
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
    if not extra_ids:
        _refuse_unknown(submission_keys, extra, id_label)
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


def pandas_sort_order(keys: Values, *, index: bool = False) -> np.ndarray:
    """The row order pandas' ``sort_values`` gives one key column by default: numpy's ``argsort``
    with ``kind="quicksort"`` on the column's values, which is not stable, so rows that share a key
    come out in the order that sort leaves them (the published graders pair them so): numpy's
    portable introsort's order (:mod:`podium.grading.quicksort`), whatever the CPU and numpy here.
    ``index=True``: ``sort_index``, which leaves keys already in order as they are."""
    array = arrow(keys)
    values = array.to_numpy(zero_copy_only=False) if array.null_count == 0 else to_numpy(array, fill="")
    if pa.types.is_string(array.type) and len(array) and pc.all(pc.match_substring_regex(array, _INTEGER)).as_py():
        with contextlib.suppress(pa.ArrowInvalid):  # pandas reads integers as int64 (beyond it: text)
            values = to_numpy(pc.cast(pc.utf8_trim_whitespace(array), pa.int64()))
    if index and (len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))):
        return np.arange(len(values), dtype=np.int64)
    return quicksort_argsort(values)


def _group_of(keys: pa.Array | pa.ChunkedArray, part: int, parts: int) -> pa.Array | pa.ChunkedArray:
    """Part ``part`` of keys joined from ``parts`` id columns (:func:`keys_of`)."""
    if parts == 1:
        return keys
    return pc.list_element(pc.split_pattern(pc.cast(keys, pa.string()), _KEY_SEP), part)


def align_published(
    answer_keys: Values,
    submission_keys: Values,
    *,
    pairing: str,
    within: tuple[int, int] | None = None,
    duplicate_ids: bool = False,
    extra_ids: bool = False,
    missing_ids: bool = False,
    id_label: str = "id",
) -> Alignment:
    """Pair rows as a published grader does that trusts row order instead of matching keys.

    ``pairing="position"``: the i-th submission row is scored against the i-th answer row (with
    ``within=(part, parts)``, the i-th row of each group named by that part of the key, e.g. per
    trip); ``pairing="sorted"``: both sides sorted by key as pandas sorts by default, then paired by
    position (``"sorted_index"``: as ``sort_index``, which leaves a file already in order as it is).
    The submission must have exactly as many rows as the answers (per group too).
    ``pairing="subset"``: any number of rows, left in file order for the competition's ``pair_rows``
    hook, which selects and pairs the scored ones at grading. Keys are
    checked only as far as the flags forbid: ``extra_ids`` (keys not among the answers),
    ``duplicate_ids`` (a key on several rows) and ``missing_ids`` (an answer key absent).
    """
    answer_keys, submission_keys = arrow(answer_keys), arrow(submission_keys)
    if answer_keys.type != submission_keys.type:
        submission_keys = pc.cast(submission_keys, answer_keys.type)
    n, m = len(answer_keys), len(submission_keys)
    if m != n and pairing != "subset":
        raise InvalidSubmissionError(
            f"the submission has {m} row(s); the published grader needs exactly {n}, one per test row",
            fix=f"write one row for every {id_label} of the sample submission",
        )
    vocabulary = pc.unique(answer_keys)
    sub_codes = _codes(submission_keys, vocabulary)
    extra = sub_codes < 0
    if not extra_ids:
        _refuse_unknown(submission_keys, extra, id_label)
    if pairing == "subset":  # the competition's pair_rows hook selects and pairs the scored rows
        return Alignment(np.arange(n, dtype=np.int64), np.arange(m, dtype=np.int64), 0)
    got = np.bincount(sub_codes[~extra], minlength=len(vocabulary))
    if not duplicate_ids and (got > 1).any():
        raise InvalidSubmissionError(
            f"{int((got > 1).sum())} {id_label} value(s) appear on more than one row",
            examples=_first_keys(vocabulary.filter(from_numpy(got > 1))),
            fix=f"write each {id_label} once",
        )
    if not missing_ids and (got == 0).any():
        raise InvalidSubmissionError(
            f"{int((got == 0).sum())} {id_label} value(s) of the test set have no row",
            examples=_first_keys(vocabulary.filter(from_numpy(got == 0))),
            fix=f"write a row for every {id_label} of the sample submission",
        )
    if pairing in ("sorted", "sorted_index"):
        index = pairing == "sorted_index"
        return Alignment(
            pandas_sort_order(answer_keys, index=index), pandas_sort_order(submission_keys, index=index), 0
        )
    if pairing != "position":
        raise ValueError(f"unknown pairing {pairing!r}")
    if within is None:
        return Alignment(np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64), 0)
    answer_groups, sub_groups = (_group_of(k, *within) for k in (answer_keys, submission_keys))
    groups = pc.unique(answer_groups)
    a_group, s_group = _codes(answer_groups, groups), _codes(sub_groups, groups)
    expected = np.bincount(a_group, minlength=len(groups))
    found = np.bincount(s_group[s_group >= 0], minlength=len(groups))
    short = found != expected
    if short.any():
        raise InvalidSubmissionError(
            f"{int(short.sum())} group(s) have a different number of rows than the test set "
            "(the published grader pairs rows by position within each group)",
            examples=_first_keys(groups.filter(from_numpy(short))),
            fix="write exactly the rows of the sample submission for each group",
        )
    return Alignment(
        np.argsort(a_group, kind="stable").astype(np.int64), np.argsort(s_group, kind="stable").astype(np.int64), 0
    )


def _refuse_unknown(submission_keys: pa.Array, extra: np.ndarray, id_label: str) -> None:
    """Refuse a submission whose rows marked in ``extra`` have keys the answers do not hold."""
    if extra.any():
        raise InvalidSubmissionError(
            f"{int(extra.sum())} row(s) have an {id_label} that is not in the test set",
            examples=_first_keys(submission_keys.filter(from_numpy(extra))),
            fix=f"keep exactly the {id_label} values of the sample submission",
        )

"""Correlation and ranking metrics: Pearson, Spearman, pooled Kendall tau, MAP@k.

Pure numpy (scipy semantics, tested against scipy); string cells are tokenised with
:func:`podium.metrics.text.encode_tokens`.
"""

from __future__ import annotations

from itertools import chain

import numpy as np
import numpy.typing as npt

from podium.errors import InvalidSubmissionError
from podium.metrics._common import FloatArray, IntArray, StrArray, check_pair, unique
from podium.metrics.text import check_rows, encode_tokens

__all__ = ["kendall_tau_pooled", "map_at_k", "mean_columnwise_spearman", "pearson"]


def _columns(y_true: npt.ArrayLike, y_pred: npt.ArrayLike, ndim: int) -> tuple[FloatArray, ...]:
    """Both arrays as float64 of one shape, reshaped to 2-D ``(n, k)``."""
    true, pred = check_pair(y_true, y_pred, ndim=ndim)
    return true.reshape(len(true), -1), pred.reshape(len(pred), -1)


def _column_pearson(x: FloatArray, y: FloatArray) -> FloatArray:
    """Pearson r of each column pair like ``scipy.stats.pearsonr``; NaN where a column is constant.

    Fewer than two rows give NaN (scipy raises); exactly two give +-1 exactly, as in scipy.
    """
    n = x.shape[0]
    if n < 2:
        return np.full(x.shape[1], np.nan)
    constant = np.all(x == x[0], axis=0) | np.all(y == y[0], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = []
        for a in (x, y):
            centred = a - a.mean(axis=0)
            scale = np.abs(centred).max(axis=0)  # guards the norm against overflow, as scipy
            unit.append(centred / (scale * np.linalg.norm(centred / scale, axis=0)))
        r = np.clip(np.sum(unit[0] * unit[1], axis=0), -1.0, 1.0)
    if n == 2:
        r = np.round(r)
    r[constant] = np.nan
    return np.asarray(r, dtype=np.float64)


def _average_ranks(x: FloatArray) -> FloatArray:
    """1-based ranks down each column, ties sharing their average rank (scipy ``rankdata``).

    A column holding NaN ranks as all-NaN (scipy's ``nan_policy="propagate"``).
    """
    n = x.shape[0]
    order = np.argsort(x, axis=0, kind="stable")
    ordered = np.take_along_axis(x, order, axis=0)
    index = np.broadcast_to(np.arange(n)[:, None], x.shape)
    differs = ordered[1:] != ordered[:-1]
    starts_tie = np.vstack([np.ones((1, x.shape[1]), bool), differs])
    ends_tie = np.vstack([differs, np.ones((1, x.shape[1]), bool)])
    first = np.maximum.accumulate(np.where(starts_tie, index, 0), axis=0)
    last = np.minimum.accumulate(np.where(ends_tie, index, n - 1)[::-1], axis=0)[::-1]
    ranks = np.empty_like(x)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=0)
    ranks[:, np.isnan(x).any(axis=0)] = np.nan
    return ranks


def pearson(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Pearson correlation of 1-D arrays (``scipy.stats.pearsonr(...)[0]``); NaN if constant.

    Used by us-patent-phrase-to-phrase-matching.
    """
    true, pred = _columns(y_true, y_pred, ndim=1)
    return float(_column_pearson(true, pred)[0])


def mean_columnwise_spearman(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Mean over columns of Spearman's rho (average ranks for ties); NaN if any column is constant.

    google-quest-challenge, whose grader averages scipy ``spearmanr(prediction, truth)`` over the
    target columns. Each rho is numpy's ``corrcoef`` of the two columns' ranks as ``spearmanr``
    computes it (the prediction first, the coefficient read below the diagonal), so the score
    equals the published one to the last bit, not only to rounding.
    """
    true, pred = _columns(y_true, y_pred, ndim=2)
    if true.shape[0] < 2:
        return float("nan")
    true_ranks, pred_ranks = _average_ranks(true), _average_ranks(pred)
    undefined = (
        np.all(true == true[0], axis=0) | np.all(pred == pred[0], axis=0) | np.isnan(true_ranks[0] + pred_ranks[0])
    )
    rhos = [
        np.nan
        if undefined[j]
        else np.asarray(np.corrcoef(np.column_stack((pred_ranks[:, j], true_ranks[:, j])), rowvar=False))[1, 0]
        for j in range(true.shape[1])
    ]
    return float(np.mean(rhos))


def _count_inversions(values: IntArray, block: int | None = None) -> int:
    """Number of pairs ``i < j`` with ``values[i] > values[j]`` for a permutation of ``0..n-1``.

    Bottom-up merge sort with one vectorised pass per level (O(n log n) comparisons): the
    sequence is padded to a power of two with larger values (adding no inversions); at block
    width ``w`` each pair of sorted halves is merged with a stable argsort, and an element of the
    right half that lands at merged slot ``m`` with right-half index ``j`` has ``m - j`` left
    elements below it, hence ``w - (m - j)`` inversions with the left half.
    """
    n = values.size
    if n < 2:
        return 0
    size = 1 << (n - 1).bit_length()
    merged = np.concatenate([values, np.arange(n, size, dtype=np.int64)])
    slot = np.arange(size, dtype=np.int64)
    total = 0
    width = 1
    while width < min(block or size, size):  # past ``block``, halves hold disjoint, ordered value ranges
        order = np.argsort(slot // (2 * width) * size + merged, kind="stable")
        source = order % (2 * width)  # where each merged element sat in its pair of halves
        right = source >= width
        below = slot[right] % (2 * width) - (source[right] - width)
        total += int(np.sum(width - below))
        merged = merged[order]
        width *= 2
    return total


def _count_inversions_by_group(local: IntArray, rows: IntArray, positions: IntArray, counts: IntArray) -> int:
    """Inversions summed over groups; ``local`` holds each element's rank within its group (row).

    Groups are padded to a power of two and bucketed by that size, so a bucket of groups of size
    at most ``P`` needs only ``log2(P)`` merge passes instead of ``log2`` of the whole sequence.
    Padding takes the next ranks after a group's own, so it adds no inversions.
    """
    total = 0
    sized = counts >= 2
    padded = np.ones_like(counts)
    padded[sized] = np.left_shift(1, np.ceil(np.log2(counts[sized])).astype(np.int64))
    for block in np.unique(padded[sized]).tolist():
        members = np.flatnonzero(padded == block)
        bucket_row = np.full(counts.size, -1, dtype=np.int64)
        bucket_row[members] = np.arange(members.size, dtype=np.int64)
        grid = np.arange(members.size * block, dtype=np.int64).reshape(members.size, block)
        mine = bucket_row[rows] >= 0
        grid[bucket_row[rows[mine]], positions[mine]] = bucket_row[rows[mine]] * block + local[mine]
        total += _count_inversions(grid.ravel(), block=block)
    return total


def _examples(rows: IntArray, what: list[str]) -> list[str]:
    return [f"row {row}: {item}" for row, item in zip(rows[:5].tolist(), what[:5], strict=True)]


def kendall_tau_pooled(y_true: StrArray, y_pred: StrArray) -> float:
    """Kendall tau pooled over notebooks (AI4Code): ``1 - 4 * inversions / sum(n * (n - 1))``.

    Cells hold whitespace-separated cell ids: the true order and the predicted order of one
    notebook. Inversions of each predicted order against the true one are summed over all
    notebooks before dividing. A predicted order that is not a permutation of the true cell ids
    (other count, unknown or repeated id) is an invalid submission. NaN when no notebook has two
    cells.
    """
    check_rows(y_true, y_pred)
    (truth, guess), size = encode_tokens(y_true, y_pred)
    counts, pred_counts = truth.counts, guess.counts
    wrong = np.flatnonzero(counts != pred_counts)
    if wrong.size:
        raise InvalidSubmissionError(
            "each notebook's predicted order must list exactly its cells",
            examples=_examples(wrong, [f"{pred_counts[r]} cell ids, expected {counts[r]}" for r in wrong[:5]]),
            fix="list every cell id of the notebook exactly once, separated by spaces",
        )

    # Each predicted cell becomes the global index of that cell in the concatenated true orders,
    # so later notebooks hold larger values and cross-notebook pairs are never inversions.
    true_keys = truth.keys(size)
    by_key = np.argsort(true_keys, kind="stable")
    sorted_keys = true_keys[by_key]
    repeats = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if repeats.size:
        raise ValueError(f"answers repeat a cell id in row {int(truth.rows[by_key[repeats[0]]])}")
    pred_keys = guess.keys(size)
    slot = np.minimum(np.searchsorted(sorted_keys, pred_keys), max(sorted_keys.size - 1, 0))
    found = sorted_keys[slot] == pred_keys if sorted_keys.size else np.zeros(pred_keys.size, dtype=bool)
    values = np.where(found, by_key[slot] if sorted_keys.size else -1, -1).astype(np.int64)

    unknown = values < 0
    repeated = np.bincount(values[~unknown], minlength=values.size)[values] > 1
    for bad, rule, what in (
        (unknown, "predicted cell ids must belong to their notebook", "unknown"),
        (repeated & ~unknown, "a predicted order may list each cell id only once", "repeated"),
    ):
        if bad.any():
            rows = guess.rows[bad]
            cells = np.array(list(chain.from_iterable(cell.split() for cell in y_pred)), dtype=object)[bad]
            raise InvalidSubmissionError(
                rule,
                examples=_examples(rows, [f"{what} cell id {cell!r}" for cell in cells[:5]]),
                fix="list every cell id of the notebook exactly once, and no other id",
            )

    pairs = int(np.sum(counts * (counts - 1)))
    if pairs == 0:
        return float("nan")
    starts = np.cumsum(counts) - counts
    inversions = _count_inversions_by_group(values - starts[guess.rows], guess.rows, guess.positions, counts)
    return 1.0 - 4.0 * inversions / pairs


def map_at_k(y_true: StrArray, y_pred: StrArray, *, k: int, separator: str | None = None) -> float:
    """Mean average precision at ``k`` over rows.

    ``y_true`` cells hold the relevant items (a set), ``y_pred`` cells the ranked predictions,
    both whitespace-separated and compared as exact strings. Only the first ``k`` predictions
    count; an item counts as a hit only where it first appears. AP = sum of precision at each
    hit / min(|truth|, k); a row with empty truth scores 0. Used by
    h-and-m-personalized-fashion-recommendations (k=12), hotel-id-2021-fgvc8 and
    whale-categorization-playground (k=5). ``separator=" "`` splits both sides on single spaces
    as the published graders do (``str.split(" ")``): a double space is an empty guess that takes
    a rank; by default cells split on any whitespace.
    """
    if k < 1:
        raise ValueError(f"k must be positive, got {k}")
    check_rows(y_true, y_pred)
    n = len(y_true)
    (truth, guess), size = encode_tokens(y_true, y_pred, separator=separator)
    truth_keys = unique(truth.keys(size))

    kept = guess.positions < k
    keys = guess.keys(size)[kept]
    rows = guess.rows[kept]
    rank = guess.positions[kept] + 1
    first = np.zeros(keys.size, dtype=bool)
    first[np.unique(keys, return_index=True)[1]] = True
    hit = first & np.isin(keys, truth_keys)

    row_hits = np.bincount(rows, weights=hit, minlength=n)
    hits_so_far = np.cumsum(hit) - (np.cumsum(row_hits) - row_hits)[rows]
    precision_sum = np.bincount(rows, weights=np.where(hit, hits_so_far / rank, 0.0), minlength=n)
    relevant = np.minimum(np.bincount(truth_keys // size, minlength=n), k)
    with np.errstate(divide="ignore", invalid="ignore"):
        average_precision = np.where(relevant > 0, precision_sum / relevant, 0.0)
    return float(np.mean(average_precision)) if n else float("nan")

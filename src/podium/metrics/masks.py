"""Segmentation metrics on run-length encoded (RLE) masks.

The RLE convention and the codec are in :mod:`podium.metrics.rle` (re-exported here).

Most metrics never build a mask: a mask is its sorted list of runs, and the pixels two masks share
are counted by intersecting their run lists with ``np.searchsorted``. All rows are laid end to end
on one pixel axis, so one pass serves every row (HuBMAP's 30k x 40k slides stay cheap: a
1.2-gigapixel mask with 100k runs is parsed and scored in about 0.1 s).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from podium.metrics._common import BoolArray, FloatArray, IntArray, mean_or_nan
from podium.metrics.rle import RleRuns, check_order, paint, rle_decode, rle_encode, rle_runs

__all__ = [
    "RleRuns",
    "dice_hausdorff",
    "global_dice_rle",
    "iou_sweep_precision",
    "mean_dice_rle",
    "pixel_fbeta_rle",
    "rle_decode",
    "rle_encode",
    "rle_runs",
]


# --------------------------------------------------------------------------------------------
# Overlap of two run lists
# --------------------------------------------------------------------------------------------


def _image_sizes(heights: npt.ArrayLike, widths: npt.ArrayLike, n: int) -> IntArray:
    h, w = np.asarray(heights), np.asarray(widths)
    if h.shape != (n,) or w.shape != (n,):
        raise ValueError(f"heights and widths must hold one value per row ({n}), got {h.shape}, {w.shape}")
    if not (np.all(h == np.round(h)) and np.all(w == np.round(w)) and np.all(h > 0) and np.all(w > 0)):
        raise ValueError("heights and widths must be positive whole numbers")
    return h.astype(np.int64) * w.astype(np.int64)


def _pixels_below(starts: IntArray, ends: IntArray, x: IntArray) -> IntArray:
    """For sorted disjoint runs, the number of covered pixels below each position in ``x``."""
    starts = np.concatenate(([-1], starts))  # an empty dummy run keeps every lookup in range
    ends = np.concatenate(([-1], ends))
    before = np.concatenate(([0], np.cumsum(ends - starts)[:-1]))  # covered pixels in earlier runs
    j = np.searchsorted(starts, x, side="left") - 1  # last run starting below x
    out: IntArray = before[j] + np.minimum(ends[j], x) - starts[j]
    return out


class _Overlap(NamedTuple):
    """Per row: pixels on in both masks, in the truth, in the prediction."""

    both: IntArray
    true: IntArray
    pred: IntArray


def _overlap(truth: RleRuns, pred: RleRuns, sizes: IntArray) -> _Overlap:
    """Intersect two run lists row by row without building masks."""
    n = len(sizes)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))  # rows laid end to end on one axis
    t_starts, t_ends = truth.starts + offsets[truth.rows], truth.ends + offsets[truth.rows]
    p_starts, p_ends = pred.starts + offsets[pred.rows], pred.ends + offsets[pred.rows]
    shared = _pixels_below(t_starts, t_ends, p_ends) - _pixels_below(t_starts, t_ends, p_starts)

    def per_row(rows: npt.NDArray[np.intp], counts: IntArray) -> IntArray:
        return np.bincount(rows, weights=counts, minlength=n).astype(np.int64)

    return _Overlap(
        per_row(pred.rows, shared),
        per_row(truth.rows, truth.ends - truth.starts),
        per_row(pred.rows, pred.ends - pred.starts),
    )


def _overlap_of_cells(y_true: Iterable[str], y_pred: Iterable[str], sizes: IntArray, empty_token: str = "") -> _Overlap:
    truth = rle_runs(y_true, sizes, empty_token=empty_token, answers=True)
    pred = rle_runs(y_pred, sizes, empty_token=empty_token)
    return _overlap(truth, pred, sizes)


def _nanmean(values: FloatArray) -> float:
    return mean_or_nan(values[~np.isnan(values)])


def _dice(o: _Overlap, empty_score: float) -> FloatArray:
    """Per-row Dice 2|X∩Y| / (|X| + |Y|); ``empty_score`` where both masks are empty."""
    total = o.true + o.pred
    return np.where(total > 0, 2 * o.both / np.maximum(total, 1), empty_score)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def mean_dice_rle(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    heights: npt.ArrayLike,
    widths: npt.ArrayLike,
    empty_score: float = 1.0,
    order: str = "F",
) -> float:
    """Mean over rows of the Dice coefficient of two RLE masks (hubmap-kidney-segmentation).

    Each row is decoded at (height, width); two empty masks score ``empty_score``. ``order`` names
    the pixel layout; Dice does not depend on it (both masks share it).
    """
    check_order(order)
    sizes = _image_sizes(heights, widths, len(y_true))
    return mean_or_nan(_dice(_overlap_of_cells(y_true, y_pred, sizes), empty_score))


def global_dice_rle(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    heights: npt.ArrayLike,
    widths: npt.ArrayLike,
    empty_token: str = "-",
) -> float:
    """Dice over the pixels of all rows pooled together.

    google-research-identify-contrails-reduce-global-warming. Cells equal to ``empty_token`` or ""
    are empty masks; NaN when every mask on both sides is empty.
    """
    sizes = _image_sizes(heights, widths, len(y_true))
    o = _overlap_of_cells(y_true, y_pred, sizes, empty_token)
    total = int(o.true.sum() + o.pred.sum())
    return 2 * int(o.both.sum()) / total if total else float("nan")


def iou_sweep_precision(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    height: int = 101,
    width: int = 101,
    empty_prediction_credit: bool = True,
) -> float:
    """Mean over images of the hit rate of IoU > t for t = 0.50, 0.55, ..., 0.95 (tgs-salt).

    Each mask is one object. Empty truth: 1 for an empty prediction, else 0. An empty prediction on
    a non-empty truth has IoU 0 by definition; ``empty_prediction_credit=True`` reproduces the
    published grader's histogram IoU, which gives it |truth| / (height * width) instead.
    """
    sizes = np.full(len(y_true), int(height) * int(width), dtype=np.int64)
    o = _overlap_of_cells(y_true, y_pred, sizes)
    iou = o.both / np.maximum(o.true + o.pred - o.both, 1)
    if empty_prediction_credit:
        iou = np.where(o.pred == 0, o.true / sizes, iou)
    thresholds = np.arange(0.5, 1.0, 0.05)  # the published grader's values, float error included
    score = (iou[:, None] > thresholds[None, :]).mean(axis=1)
    score = np.where(o.true == 0, (o.pred == 0).astype(np.float64), score)
    return mean_or_nan(score)


def pixel_fbeta_rle(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    heights: npt.ArrayLike,
    widths: npt.ArrayLike,
    beta: float = 0.5,
    order: str = "C",
) -> float:
    """Mean over rows of the pixel F-beta score of two RLE masks (vesuvius-challenge-ink-detection).

    Equals sklearn ``fbeta_score(zero_division=0)`` on the flattened masks: 0 without any true
    positive. The masks are row-major (``order="C"``) there; the score does not depend on it.
    """
    check_order(order)
    sizes = _image_sizes(heights, widths, len(y_true))
    o = _overlap_of_cells(y_true, y_pred, sizes)
    b2 = float(beta) ** 2
    denominator = b2 * o.true + o.pred  # == (1 + b2) tp + b2 fn + fp
    return mean_or_nan(np.where(denominator > 0, (1 + b2) * o.both / np.maximum(denominator, 1), 0.0))


def _by_group(runs: RleRuns, group_of_row: npt.NDArray[np.intp], n_groups: int) -> list[npt.NDArray[np.intp]]:
    """Indices of the runs of each group (one argsort, no scan per group)."""
    groups = group_of_row[runs.rows]
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(n_groups)]


def _volume(runs: RleRuns, index: npt.NDArray[np.intp], offsets: IntArray, size: int) -> BoolArray:
    """Flat mask of one volume: the runs of its rows shifted to their slice, OR-ed together."""
    if index.size == 0:
        return np.zeros(size, dtype=bool)
    starts = runs.starts[index] + offsets[runs.rows[index]]
    ends = runs.ends[index] + offsets[runs.rows[index]]
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    opens = np.r_[True, starts[1:] > ends[:-1]]  # a run that does not touch the union so far
    closes = np.r_[np.flatnonzero(opens)[1:] - 1, len(starts) - 1]
    return paint(starts[opens], ends[closes], size)


def dice_hausdorff(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    ids: npt.ArrayLike,
    heights: npt.ArrayLike,
    widths: npt.ArrayLike,
    dice_weight: float = 0.4,
) -> float:
    """``w * Dice + (1 - w) * (1 - Hausdorff)`` (uw-madison-gi-tract-image-segmentation).

    Dice: per row (2-D), NaN where both masks are empty, averaged with nanmean. Hausdorff: per
    case-day (the id before "_slice_"), the masks of all classes of a slice are OR-ed and the
    slices, sorted by id, stacked into a volume. Both empty: NaN (skipped); identical: 0; exactly
    one empty, or more than 10x as many predicted voxels as true ones: 1; otherwise the symmetric
    Hausdorff distance of the voxel coordinates divided by the volume shape, divided by sqrt(3).
    Averaged with nanmean.
    """
    from scipy.spatial.distance import directed_hausdorff

    n = len(y_true)
    sizes = _image_sizes(heights, widths, n)
    truth = rle_runs(y_true, sizes, answers=True)
    pred = rle_runs(y_pred, sizes)
    dice = _dice(_overlap(truth, pred, sizes), float("nan"))

    slices, slice_of_row = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
    days, day_of_slice = np.unique([s.partition("_slice_")[0] for s in slices], return_inverse=True)
    by_day = np.argsort(day_of_slice, kind="stable")  # slices sorted by (day, id)
    first = np.searchsorted(day_of_slice[by_day], np.arange(len(days)))
    depth_of_slice = np.empty(len(slices), dtype=np.int64)
    depth_of_slice[by_day] = np.arange(len(slices)) - first[day_of_slice[by_day]]
    n_slices = np.bincount(day_of_slice, minlength=len(days))
    day_of_row = day_of_slice[slice_of_row]

    h = np.asarray(heights).astype(np.int64)
    shape_of_day = np.zeros((len(days), 2), dtype=np.int64)
    shape_of_day[day_of_row] = np.column_stack([h, sizes // h])
    if np.any(shape_of_day[day_of_row] != np.column_stack([h, sizes // h])):
        raise ValueError("the slices of one case-day must share one image height and width")
    offsets = depth_of_slice[slice_of_row] * sizes  # first voxel of each row's slice

    true_runs = _by_group(truth, day_of_row, len(days))
    pred_runs = _by_group(pred, day_of_row, len(days))
    distances = np.empty(len(days))
    for day in range(len(days)):
        (height, width), depth = shape_of_day[day], n_slices[day]
        size = int(depth * height * width)
        t = _volume(truth, true_runs[day], offsets, size)
        p = _volume(pred, pred_runs[day], offsets, size)
        n_true, n_pred = int(t.sum()), int(p.sum())
        if n_true == 0 and n_pred == 0:
            distances[day] = np.nan
        elif np.array_equal(t, p):
            distances[day] = 0.0
        elif n_true == 0 or n_pred == 0 or n_pred > 10 * n_true:
            distances[day] = 1.0
        else:
            a, b = (_unit_coordinates(np.flatnonzero(m), depth, height, width) for m in (t, p))
            d = max(directed_hausdorff(a, b)[0], directed_hausdorff(b, a)[0])
            distances[day] = d / np.sqrt(3)
    return dice_weight * _nanmean(dice) + (1 - dice_weight) * (1 - _nanmean(distances))


def _unit_coordinates(voxels: IntArray, depth: int, height: int, width: int) -> FloatArray:
    """(slice, row, column) of column-major flat voxel indices, divided by the volume shape."""
    slice_index, pixel = np.divmod(voxels, height * width)
    column, row = np.divmod(pixel, height)
    return np.column_stack([slice_index / depth, row / height, column / width])

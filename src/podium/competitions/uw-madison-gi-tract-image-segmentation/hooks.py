"""Fixture hook: answers as case-days of consecutive slices, one row per (slice, class); and version
1's scoring as the published grader computes it (rows paired by position)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from podium.competition import Competition
from podium.errors import InvalidSubmissionError, quote, shorten
from podium.grading.table import Frame, frame_from_records

CLASSES = ("large_bowel", "small_bowel", "stomach")


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    from podium.metrics.masks import rle_encode

    rows = []
    slices = max(2, n // (2 * len(CLASSES)))
    for case_day, (height, width) in zip(("case7_day0", "case42_day13"), ((12, 10), (11, 11)), strict=True):
        for s in range(1, slices + 1):
            for organ in CLASSES:
                mask = np.zeros((height, width), bool)
                if rng.random() < 0.7:  # some organs are absent from a slice
                    top, left = rng.integers(0, height - 3), rng.integers(0, width - 3)
                    mask[top : top + rng.integers(2, 4), left : left + rng.integers(2, 4)] = True
                rows.append((f"{case_day}_slice_{s:04d}", organ, rle_encode(mask), width, height))
    return frame_from_records(["id", "class", "predicted", "image_width", "image_height"], rows)


class _Mask(NamedTuple):
    """A 2-D mask kept sparse: its set pixels as sorted column-major flat indices, and its shape."""

    pixels: np.ndarray
    shape: tuple[int, int]


class _Volume(NamedTuple):
    """A case-day's slices stacked: each slice's pixels, and the (depth, height, width) shape."""

    slices: list[np.ndarray]
    shape: tuple[int, int, int]

    def voxels(self) -> np.ndarray:
        """(slice, row, column) of every set voxel, as ``np.argwhere`` gives them (up to order)."""
        height = self.shape[1]
        parts = [np.column_stack([np.full(p.size, k), p % height, p // height]) for k, p in enumerate(self.slices)]
        return np.concatenate(parts) if parts else np.empty((0, 3), dtype=np.int64)


def _decode(cell: str, height: int, width: int, row: int) -> _Mask:
    """One RLE cell (of data row ``row``, 0-based) as the published grader decodes it: 1-indexed
    (start, length) pairs on a column-major mask of the given size; runs past the end are cut
    there; overlapping runs fail. A number of 2**63 or more is refused (podium's definition of a
    number; numpy cannot hold it there either)."""
    size = int(height) * int(width)
    tokens = str(cell).split()
    try:
        numbers = np.array(tokens, dtype=np.int64)
    except OverflowError:
        huge = next(t for t in tokens if not -(2**63) <= int(t) < 2**63)
        raise InvalidSubmissionError(
            "run-length encoding: every number must be an integer below 2**63",
            examples=[f"row {row + 1}: {quote(huge)}"],
            fix="write 1-indexed pixel starts and run lengths within the image",
        ) from None
    starts = np.clip(numbers[0::2][: numbers.size // 2] - 1, 0, size)
    # a start plus a length past 2**63 wraps round in int64 there too, and the run is then empty
    ends = np.clip(starts + numbers[1::2][: numbers.size // 2], 0, size)
    runs = np.flatnonzero(ends > starts)
    order = runs[np.argsort(starts[runs], kind="stable")]
    if order.size > 1 and (starts[order][1:] < np.maximum.accumulate(ends[order])[:-1]).any():
        raise InvalidSubmissionError(f"overlapping runs in the RLE {shorten(str(cell))!r}")
    pixels = np.concatenate([np.arange(starts[i], ends[i]) for i in order]) if order.size else np.empty(0, np.int64)
    return _Mask(pixels, (int(height), int(width)))


def _volumes(masks: list[_Mask], ids: np.ndarray) -> list[_Volume]:
    """The published grouping: rows sorted by id (stable), the masks of one slice OR-ed, the slices
    of each case-day stacked in that order; case-days in the order their first slice comes. Masks
    of one slice or case-day decoded with different sizes fail there (numpy cannot stack them)."""
    slices: dict[str, list[_Mask]] = {}
    for mask, name in sorted(zip(masks, ids.tolist(), strict=False), key=lambda pair: pair[1]):
        slices.setdefault(name, []).append(mask)
    days: dict[str, list[_Mask]] = {}
    for name, parts in slices.items():
        if len({p.shape for p in parts}) > 1:
            raise InvalidSubmissionError(_SIZES)
        union = _Mask(np.unique(np.concatenate([p.pixels for p in parts])), parts[0].shape)
        days.setdefault(name.split("_slice_")[0], []).append(union)
    volumes = []
    for day in days.values():
        if len({m.shape for m in day}) > 1:
            raise InvalidSubmissionError(_SIZES)
        volumes.append(_Volume([m.pixels for m in day], (len(day), *day[0].shape)))
    return volumes


_SIZES = (
    "masks of one slice or case-day have different sizes (each row is decoded with the image size of "
    "the answer row at its position, as the published grader does)"
)


def _hausdorff(pred: _Volume, true: _Volume) -> float:
    from scipy.spatial.distance import directed_hausdorff

    n_pred, n_true = sum(p.size for p in pred.slices), sum(t.size for t in true.slices)
    if n_pred == 0 and n_true == 0:
        return float("nan")
    if pred.shape == true.shape and all(np.array_equal(p, t) for p, t in zip(pred.slices, true.slices, strict=True)):
        return 0.0
    if n_pred == 0 or n_true == 0 or n_pred > 10 * n_true:
        return 1.0
    scale = np.array(true.shape, dtype=np.float64)
    a, b = true.voxels() / scale, pred.voxels() / scale
    return max(directed_hausdorff(a, b)[0], directed_hausdorff(b, a)[0]) / float(np.sqrt(3))


def _nanmean(values: list[float]) -> float:
    array = np.asarray(values, dtype=np.float64)
    return float(np.mean(array[~np.isnan(array)])) if (~np.isnan(array)).any() else float("nan")


def published_score(answers: dict[str, np.ndarray], submission: dict[str, np.ndarray]) -> float:
    """Version 1: the published grader's computation, rows paired by position (issue 23).

    The i-th submission row is decoded with the i-th answer row's image size and scored against it
    (Dice, both empty skipped), as far as the shorter file goes; for Hausdorff, each file's masks are
    grouped into case-day volumes by that file's own ids and the volumes paired in order. Ids and
    row counts are never compared. Masks stay sparse (set pixels only), so memory follows the masks'
    area, not the images'.
    """
    heights = np.asarray(answers["image_height"]).astype(np.int64)
    widths = np.asarray(answers["image_width"]).astype(np.int64)
    n = min(len(submission["predicted"]), heights.size)
    pred = [_decode(submission["predicted"][i], heights[i], widths[i], i) for i in range(n)]
    true = [
        _decode(cell, h, w, i) for i, (cell, h, w) in enumerate(zip(answers["predicted"], heights, widths, strict=True))
    ]
    dice = []
    for p, t in zip(pred, true, strict=False):
        total = p.pixels.size + t.pixels.size
        both = np.intersect1d(p.pixels, t.pixels, assume_unique=True).size
        dice.append(2 * both / total if total else float("nan"))
    pred_days = _volumes(pred, np.asarray(submission["id"], dtype=object)[:n])
    true_days = _volumes(true, np.asarray(answers["id"], dtype=object))
    distances = [_hausdorff(p, t) for p, t in zip(pred_days, true_days, strict=False)]
    return 0.4 * _nanmean(dice) + 0.6 * (1 - _nanmean(distances))

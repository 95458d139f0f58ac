"""3-D object detection: mean average precision over IoU thresholds on oriented boxes (lyft).

Speed (one core): lyft-sized input (4.5k samples, 120k true boxes, 240k predictions) scores in about
5 s, most of it in shapely for the box pairs that can reach the lowest IoU threshold.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from podium.metrics._boxes import Records, label_codes, parse_records, same_key_pairs
from podium.metrics._common import FloatArray, IndexArray, IntArray, _reject

__all__ = ["map_3d"]


_LYFT_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


class _Boxes3d(NamedTuple):
    """Per box: footprint polygon, its axis-aligned bounds, bottom, top, footprint area, volume."""

    polygons: npt.NDArray[np.object_]
    bounds: FloatArray  # (n, 4): x_min, y_min, x_max, y_max
    bottom: FloatArray
    top: FloatArray
    area: FloatArray
    volume: FloatArray


def _boxes_3d(boxes: FloatArray) -> _Boxes3d:
    """Geometry of [cx, cy, cz, width, length, height, yaw] boxes (length along the heading)."""
    import shapely

    cx, cy, cz, width, length, height, yaw = boxes.T
    heading = np.column_stack([np.cos(yaw), np.sin(yaw)])[:, None, :]
    normal = heading[:, :, ::-1] * np.array([1, -1])  # (sin, -cos)
    along = np.array([1, 1, -1, -1])[None, :, None] * (length / 2)[:, None, None] * heading
    across = np.array([1, -1, -1, 1])[None, :, None] * (width / 2)[:, None, None] * normal
    corners = np.column_stack([cx, cy])[:, None, :] + along + across
    return _Boxes3d(
        polygons=shapely.polygons(corners),
        bounds=np.column_stack([corners.min(axis=1), corners.max(axis=1)]),
        bottom=cz - height / 2,
        top=cz + height / 2,
        area=width * length,
        volume=width * length * height,
    )


_PAIR_CHUNK = 1 << 20  # pairs per vectorised step: bounds the memory of dense scenes


def _box3d_iou(a: FloatArray, b: FloatArray, pairs_a: IndexArray, pairs_b: IndexArray, floor: float) -> FloatArray:
    """IoU of the rotated 3-D boxes a[pairs_a[k]] and b[pairs_b[k]]: footprint intersection area
    x vertical overlap / union volume, clipped to [0, 1].

    Shapely runs only where the IoU may exceed ``floor``: an upper bound from the vertical overlap
    and the overlap of the footprints' axis-aligned bounds rules the other pairs out, and they are
    returned as 0 (an IoU <= floor can neither hit nor be the best match of a hit).
    """
    import shapely

    ga, gb = _boxes_3d(a), _boxes_3d(b)
    iou = np.zeros(len(pairs_a))
    for low in range(0, len(pairs_a), _PAIR_CHUNK):
        i, j = pairs_a[low : low + _PAIR_CHUNK], pairs_b[low : low + _PAIR_CHUNK]
        dz = np.minimum(ga.top[i], gb.top[j]) - np.maximum(ga.bottom[i], gb.bottom[j])
        lo = np.maximum(ga.bounds[i, :2], gb.bounds[j, :2])
        hi = np.minimum(ga.bounds[i, 2:], gb.bounds[j, 2:])
        overlap = np.prod(np.clip(hi - lo, 0, None), axis=1)
        bound = np.minimum(overlap, np.minimum(ga.area[i], gb.area[j])) * np.clip(dz, 0, None)
        volumes = ga.volume[i] + gb.volume[j]
        maybe = np.flatnonzero(bound > floor * (volumes - bound))  # bound / (V - bound) > floor
        i, j, dz, volumes = i[maybe], j[maybe], dz[maybe], volumes[maybe]
        inter = shapely.area(shapely.intersection(ga.polygons[i], gb.polygons[j])) * dz
        iou[low + maybe] = np.clip(inter / (volumes - inter), 0, 1)
    return iou


def _check_sizes(records: Records, answers: bool) -> None:
    bad = np.flatnonzero((records.numbers[:, 4:7] <= 0).any(axis=1))
    if bad.size:
        _reject(
            answers,
            "box string: width, length and height must be positive",
            [f"row {records.rows[k] + 1}: {records.numbers[k, 4:7].tolist()}" for k in bad[:5]],
            "write positive box sizes",
        )


def _suffix_max_by_group(values: FloatArray, groups: IntArray) -> FloatArray:
    """max(values[j] for j >= i in the same group), for values sorted by group (exact, no loop).

    Values are replaced by their ranks, shifted by a per-group integer offset so that a later
    group always ranks above an earlier one; one reversed cumulative max then never crosses a
    group boundary.
    """
    table, rank = np.unique(values, return_inverse=True)
    span = len(table)
    keyed = rank.astype(np.int64) + span * (groups.max(initial=0) - groups)
    suffix = np.maximum.accumulate(keyed[::-1])[::-1]
    out: FloatArray = table[suffix - span * (groups.max(initial=0) - groups)]
    return out


def map_3d(
    y_true: npt.NDArray[np.object_],
    y_pred: npt.NDArray[np.object_],
    *,
    iou_thresholds: tuple[float, ...] = _LYFT_THRESHOLDS,
) -> float:
    """Lyft 3-D mAP: mean over (sample, IoU threshold) of the mean AP over the true classes.

    3d-object-detection-for-autonomous-vehicles. Cells repeat "confidence cx cy cz width length
    height yaw class_name" (answers carry confidence 1.0); an empty cell has no predictions. Per
    sample and class, predictions by descending confidence are matched to the true box of highest
    IoU; a hit needs IoU > threshold and that box still unmatched. AP is the area under the
    precision envelope (VOC); a true class without predictions has AP 0; predicted classes absent
    from the sample's truth are ignored. NaN if a sample has no true box (its mean over no classes
    is undefined, as in the published grader).
    """
    layout = "confidence cx cy cz width length height yaw label"
    truth = parse_records(y_true, layout, answers=True)
    pred = parse_records(y_pred, layout, answers=False)
    _check_sizes(truth, True)
    _check_sizes(pred, False)
    n = len(y_true)
    true_codes, pred_codes = label_codes(truth.labels, pred.labels)
    n_labels = int(max(true_codes.max(initial=-1), pred_codes.max(initial=-1))) + 1
    true_keys = truth.rows * n_labels + true_codes  # (sample, class) groups
    pred_keys = pred.rows * n_labels + pred_codes
    groups, true_group = np.unique(true_keys, return_inverse=True)
    n_classes = np.bincount(groups // n_labels, minlength=n)
    if (n_classes == 0).any():
        return float("nan")
    n_true = np.bincount(true_group, minlength=len(groups))

    # best true box of each prediction: max IoU, first in answer order on ties
    p_idx, t_idx = same_key_pairs(pred_keys, true_keys)
    floor = min(iou_thresholds, default=1.0)
    iou = _box3d_iou(pred.numbers[:, 1:8], truth.numbers[:, 1:8], p_idx, t_idx, floor)
    order = np.lexsort((t_idx, -iou, p_idx))
    first = order[np.r_[True, p_idx[order][1:] != p_idx[order][:-1]]] if order.size else order
    scored = p_idx[first]  # predictions of a class present in their sample's truth
    best_iou, best_true = iou[first], t_idx[first]
    group = true_group[best_true]
    rank = np.lexsort((-pred.numbers[scored, 0], group))  # by group, then confidence desc (stable)
    best_iou, best_true, group = best_iou[rank], best_true[rank], group[rank]
    position = np.arange(len(group)) - np.searchsorted(group, group) + 1  # 1-based within group

    sample_of_group = groups // n_labels
    total = 0.0
    for threshold in iou_thresholds:
        eligible = np.flatnonzero(best_iou > threshold)
        _, first_claim = np.unique(best_true[eligible], return_index=True)
        hit = np.zeros(len(group), dtype=bool)
        hit[eligible[first_claim]] = True  # the first eligible claim on a true box wins it
        cum_hits = np.cumsum(hit) - np.r_[0, np.cumsum(hit)][np.searchsorted(group, group)]
        envelope = _suffix_max_by_group(cum_hits / position, group)
        ap = np.bincount(group, weights=hit * envelope, minlength=len(groups)) / n_true
        per_sample = np.bincount(sample_of_group, weights=ap, minlength=n) / n_classes
        total += per_sample.sum()
    return total / (n * len(iou_thresholds)) if n else float("nan")

"""The baseline grader's mask metrics: RLE decoding as the published graders do it (one Python call per image,
a loop over the runs, a full-size image) and the Dice, IoU-sweep, Hausdorff and pixel F-beta scores built
on it (see ``baseline.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from _baseline_labels import _text

# --------------------------------------------------------------------------------------------
# RLE decoding, as the published graders do it: one Python call per image, a Python loop over
# the runs, a full-size uint8 image.


def rle_decode(rle: Any, height: int, width: int, *, order: str = "F") -> np.ndarray:
    """Decode a 1-indexed 'start length' RLE into a (height, width) uint8 mask.

    order "F": column-major (pixel 2 is row 2 of column 1); "C": row-major.
    Raises ValueError on unsorted, non-positive or overlapping runs.
    """
    if not isinstance(rle, str):
        raise ValueError(f"RLE must be a string, got {rle!r}")
    tokens = rle.split()
    image = np.zeros(height * width, dtype=np.uint8)
    if not tokens:
        return image.reshape((height, width)) if order == "C" else image.reshape((width, height)).T
    if len(tokens) % 2:
        raise ValueError("RLE has an odd number of tokens")
    starts = np.asarray(tokens[0::2], dtype=np.int64)
    lengths = np.asarray(tokens[1::2], dtype=np.int64)
    if (starts <= 0).any() or (lengths <= 0).any():
        raise ValueError("RLE starts and lengths must be positive")
    starts -= 1
    ends = starts + lengths
    if (np.diff(starts) < 0).any():
        raise ValueError("RLE starts must be sorted")
    if (starts[1:] < ends[:-1]).any():
        raise ValueError("RLE runs overlap")
    if len(ends) and ends[-1] > height * width:
        raise ValueError("RLE runs past the end of the image")
    for lo, hi in zip(starts, ends, strict=True):
        image[lo:hi] = 1
    if order == "C":
        return image.reshape((height, width))
    return image.reshape((width, height)).T


# masks


def _dice(a: np.ndarray, b: np.ndarray, empty: float) -> float:
    total = a.sum() + b.sum()
    if total == 0:
        return empty
    return 2.0 * np.logical_and(a, b).sum() / total


def mean_dice_rle(y_true, y_pred, heights, widths, empty_score=1.0, empty_token=None, **_):
    scores = []
    for t, p, h, w in zip(y_true, y_pred, heights, widths, strict=True):
        t, p = _rle_text(t, empty_token), _rle_text(p, empty_token)
        scores.append(_dice(rle_decode(t, int(h), int(w)), rle_decode(p, int(h), int(w)), empty_score))
    return float(np.mean(scores))


def _rle_text(value: Any, empty_token: str | None) -> str:
    text = _text(value)
    return "" if empty_token is not None and text.strip() == empty_token else text


def global_dice_rle(y_true, y_pred, heights, widths, empty_token="-", **_):
    truth, pred = [], []
    for t, p, h, w in zip(y_true, y_pred, heights, widths, strict=True):
        truth.append(rle_decode(_rle_text(t, empty_token), int(h), int(w)).ravel())
        pred.append(rle_decode(_rle_text(p, empty_token), int(h), int(w)).ravel())
    t_all, p_all = np.concatenate(truth), np.concatenate(pred)
    total = t_all.sum() + p_all.sum()
    return float(2.0 * np.logical_and(t_all, p_all).sum() / total) if total else float("nan")


def iou_sweep_precision(y_true, y_pred, height=101, width=101, empty_prediction_credit=True, **_):
    thresholds = np.arange(0.5, 1.0, 0.05)
    scores = []
    for t, p in zip(y_true, y_pred, strict=True):
        truth, pred = rle_decode(_text(t), height, width), rle_decode(_text(p), height, width)
        if truth.sum() == 0:
            scores.append(1.0 if pred.sum() == 0 else 0.0)
            continue
        if empty_prediction_credit:  # the public kernel's 2-bin histogram IoU
            inter = np.histogram2d(truth.flatten(), pred.flatten(), bins=(2, 2))[0]
            area_t = np.histogram(truth, bins=2)[0][:, None]
            area_p = np.histogram(pred, bins=2)[0][None, :]
            union = area_t + area_p - inter
            iou = inter[1:, 1:] / np.where(union[1:, 1:] == 0, 1e-9, union[1:, 1:])
            iou = float(iou[0, 0])
        else:
            union = np.logical_or(truth, pred).sum()
            iou = np.logical_and(truth, pred).sum() / union
        scores.append(float(np.mean([1.0 if iou > th else 0.0 for th in thresholds])))
    return float(np.mean(scores))


def dice_hausdorff(y_true, y_pred, ids, heights, widths, dice_weight=0.4, **_):
    from scipy.spatial.distance import directed_hausdorff

    truth_masks, pred_masks, dices = [], [], []
    for t, p, h, w in zip(y_true, y_pred, heights, widths, strict=True):
        a, b = rle_decode(_text(t), int(h), int(w)), rle_decode(_text(p), int(h), int(w))
        truth_masks.append(a)
        pred_masks.append(b)
        dices.append(_dice(a, b, float("nan")))
    df = pd.DataFrame({"id": ids, "row": np.arange(len(ids))})
    df["case_day"] = df["id"].astype(str).str.partition("_slice_")[0]
    hausdorff = []
    for _, group in df.groupby("case_day", sort=False):
        slices: dict[str, list[int]] = {}
        for rid, row in zip(group["id"], group["row"], strict=True):
            slices.setdefault(rid, []).append(row)
        keys = sorted(slices)
        t_vol = np.stack([np.logical_or.reduce([truth_masks[r] for r in slices[k]]) for k in keys])
        p_vol = np.stack([np.logical_or.reduce([pred_masks[r] for r in slices[k]]) for k in keys])
        nt, np_ = t_vol.sum(), p_vol.sum()
        if nt == 0 and np_ == 0:
            hausdorff.append(np.nan)
        elif np.array_equal(t_vol, p_vol):
            hausdorff.append(0.0)
        elif nt == 0 or np_ == 0 or np_ > 10 * nt:
            hausdorff.append(1.0)
        else:
            shape = np.array(t_vol.shape, float)
            a, b = np.argwhere(t_vol) / shape, np.argwhere(p_vol) / shape
            d = max(directed_hausdorff(a, b)[0], directed_hausdorff(b, a)[0])
            hausdorff.append(d / np.sqrt(3))
    return dice_weight * float(np.nanmean(dices)) + (1 - dice_weight) * (1 - float(np.nanmean(hausdorff)))


def pixel_fbeta_rle(y_true, y_pred, heights, widths, beta=0.5, order="C", **_):
    from sklearn.metrics import fbeta_score

    scores = []
    for t, p, h, w in zip(y_true, y_pred, heights, widths, strict=True):
        a = rle_decode(_text(t), int(h), int(w), order=order)
        b = rle_decode(_text(p), int(h), int(w), order=order)
        scores.append(fbeta_score(a.flatten(), b.flatten(), beta=beta))
    return float(np.mean(scores))

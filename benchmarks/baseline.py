"""A baseline grader written the way the published harness (MLE-bench) grades, for benchmarks.

    python benchmarks/baseline.py SUBMISSION.csv ID[@VERSION] --data-dir DIR

Prints ``{"competition_id": ..., "score": ..., "error": ...}`` as JSON. Like the published
graders it reads both files with ``pandas.read_csv(float_precision="round_trip")``, checks the
columns and row count, sorts both frames by id, requires identical id arrays, and then calls the
scikit-learn / scipy metric, or, for bespoke metrics, a straightforward Python implementation in
the published style (a Python loop per row / per image, one RLE decode per image, pandas groupby
for grouped metrics). Which competition uses which metric, its options and the id and target
columns come from podium's declaration (the published harness reads the same facts from its own
config files), so both graders score the same definition.

Deliberately *not* reproduced, which makes this baseline faster than the published harness: the
published ``grade-sample`` imports the registry's data-preparation code of every competition
before grading (0.5-1 s); this baseline imports pandas, and scikit-learn / scipy only where its
metric needs them. Score rounding to 5 decimals is left out so scores can be compared exactly.

Where the baseline reuses podium code it says so: answers that are not a plain CSV table (JSONL,
or answers a hook reshapes) are loaded with the competition's ``hooks.load_answers``; the 3D
detection mAP calls podium's ``map_3d`` once per sample (the published grader also scores sample
by sample, in a process pool).
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import io
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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


def _text(value: Any) -> str:
    """NaN -> "" and everything else as str (the published graders' fillna("") / str cast)."""
    if isinstance(value, float) and math.isnan(value):
        return ""
    return str(value)


# --------------------------------------------------------------------------------------------
# Metrics. Each takes the aligned y_true / y_pred (numpy arrays from the sorted pandas frames)
# plus the declaration's inputs and options, under podium's names.

# classification


def accuracy(y_true, y_pred, **_):
    from sklearn.metrics import accuracy_score

    return accuracy_score(_labels(y_true), _labels(y_pred))


def _labels(values: np.ndarray) -> np.ndarray:
    """Labels as the published helpers compare them: pandas' parsed values, text where mixed."""
    if values.dtype == object:
        return np.array([_text(v).strip() for v in values], dtype=object)
    return values


def error_rate(y_true, y_pred, first_token=False, **_):
    from sklearn.metrics import accuracy_score

    truth = [_text(v).strip() for v in y_true]
    # inaturalist (first_token): only the first whitespace token of a string prediction counts
    pred = [(_text(v).split() or [""])[0] for v in y_pred] if first_token else [_text(v).strip() for v in y_pred]
    truth = [_int_text(v) for v in truth]
    pred = [_int_text(v) for v in pred]
    return 1.0 - accuracy_score(truth, pred)


def _int_text(v: str) -> str:
    try:
        return str(int(float(v)))
    except ValueError:
        return v


def roc_auc(y_true, y_pred, **_):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y_true, y_pred)


def mean_columnwise_roc_auc(y_true, y_pred, **_):
    from sklearn.metrics import roc_auc_score

    y_true, y_pred = np.atleast_2d(y_true.T).T, np.atleast_2d(y_pred.T).T
    return float(np.mean([roc_auc_score(y_true[:, j], y_pred[:, j]) for j in range(y_true.shape[1])]))


def alaska_weighted_auc(y_true, y_pred, **_):
    from sklearn.metrics import auc, roc_curve

    fpr, tpr, _ = roc_curve(y_true, y_pred, pos_label=1)
    breaks, weights = [0.0, 0.4, 1.0], [2, 1]
    for b in breaks:  # insert missing breakpoints with interpolated FPR
        if not np.isclose(tpr, b).any():
            pos = int(np.searchsorted(tpr, b))
            f = np.interp(b, tpr, fpr)
            tpr, fpr = np.insert(tpr, pos, b), np.insert(fpr, pos, f)
    total = 0.0
    for lo, hi, w in zip(breaks[:-1], breaks[1:], weights, strict=True):
        mask = (tpr >= lo) & (tpr <= hi)
        x = np.concatenate([fpr[mask], [1.0]])
        y = np.concatenate([tpr[mask], [hi]]) - lo
        total += auc(x, y) * w
    return total / float(np.dot(np.diff(breaks), weights))


def jigsaw_bias_auc(y_true, y_pred, identities, binarize_predictions=True, power=-5.0, **_):
    from sklearn.metrics import roc_auc_score

    def auc_or_nan(t, p):
        try:
            return roc_auc_score(t, p)
        except ValueError:
            return np.nan

    df = pd.DataFrame({"y": np.asarray(y_true, float) >= 0.5, "p": np.asarray(y_pred, float)})
    if binarize_predictions:
        df["p"] = (df["p"] >= 0.5).astype(float)
    ident = np.nan_to_num(np.asarray(identities, float)) >= 0.5
    sub, bpsn, bnsp = [], [], []
    for j in range(ident.shape[1]):
        g = ident[:, j]
        s = df[g]
        sub.append(auc_or_nan(s["y"], s["p"]))
        m = (g & ~df["y"]) | (~g & df["y"])
        bpsn.append(auc_or_nan(df.loc[m, "y"], df.loc[m, "p"]))
        m = (g & df["y"]) | (~g & ~df["y"])
        bnsp.append(auc_or_nan(df.loc[m, "y"], df.loc[m, "p"]))

    def power_mean(values):
        return float(np.power(np.mean(np.power(np.array(values), power)), 1 / power))

    overall = auc_or_nan(df["y"], df["p"])
    return 0.25 * overall + 0.25 * (power_mean(sub) + power_mean(bpsn) + power_mean(bnsp))


def log_loss(y_true, y_pred, **_):
    from sklearn.metrics import log_loss as sk_log_loss

    if y_true.ndim == 2:  # one-hot answers: pass the class labels and all columns
        return sk_log_loss(np.argmax(y_true, axis=1), y_pred, labels=list(range(y_true.shape[1])))
    return sk_log_loss(y_true, y_pred, labels=[0, 1])


def rsna_fracture_log_loss(y_true, y_pred, studies, label_types, eps=1e-15, **_):
    df = pd.DataFrame(
        {"study": studies, "type": label_types, "y": np.asarray(y_true, float), "p": np.asarray(y_pred, float)}
    )
    p = df["p"].clip(eps, 1 - eps)
    df["loss"] = -(df["y"] * np.log(p) + (1 - df["y"]) * np.log(1 - p))
    base = np.where(df["type"] == "patient_overall", 7.0, 1.0)
    df["w"] = base * (1 + df["y"])
    df["wl"] = df["w"] * df["loss"]
    per_study = df.groupby("study")[["wl", "w"]].sum()
    return float((per_study["wl"] / per_study["w"]).mean())


def kl_divergence(y_true, y_pred, eps=1e-15, **_):
    truth = np.asarray(y_true, float)
    truth = truth / truth.sum(axis=1, keepdims=True)
    pred = np.clip(np.asarray(y_pred, float), eps, 1 - eps)
    solution = pd.DataFrame(truth)
    submission = pd.DataFrame(pred)
    for col in solution.columns:  # Kaggle's implementation: column by column in pandas
        nonzero = solution[col] != 0
        solution[col] = solution[col].astype(float)
        solution.loc[nonzero, col] = solution.loc[nonzero, col] * np.log(
            solution.loc[nonzero, col] / submission.loc[nonzero, col]
        )
        solution.loc[~nonzero, col] = 0
    return float(np.average(solution.sum(axis=1)))


def quadratic_weighted_kappa(y_true, y_pred, **_):
    from sklearn.metrics import cohen_kappa_score

    return cohen_kappa_score(y_pred, y_true, weights="quadratic")


def f1(y_true, y_pred, average="macro", **_):
    from sklearn.metrics import f1_score

    return f1_score(_labels(y_true), _labels(y_pred), average=average)


def multilabel_micro_f1(y_true, y_pred, **_):
    import warnings

    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    truth = [_text(v).split() for v in y_true]
    pred = [_text(v).split() for v in y_pred]
    classes = sorted({t for row in truth for t in row})
    mlb = MultiLabelBinarizer(classes=classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unknown predicted tags are dropped, as published
        t = mlb.fit_transform(truth)
        p = mlb.transform(pred)
    return f1_score(t, p, average="micro")


def mean_sample_fbeta(y_true, y_pred, beta=1.0, **_):
    # Kaggle's per-sample F-beta (imet F2, facebook F1): a Python set per row.
    b2 = beta * beta
    scores = []
    for t, p in zip(y_true, y_pred, strict=True):
        truth, pred = set(_text(t).split()), set(_text(p).split())
        if not truth and not pred:
            scores.append(1.0)
            continue
        tp = len(truth & pred)
        denominator = b2 * len(truth) + len(pred)
        scores.append((1 + b2) * tp / denominator if denominator else 0.0)
    return float(np.mean(scores))


def probabilistic_f1(y_true, y_pred, beta=1.0, **_):
    y = np.asarray(y_true, float)
    p = np.clip(np.asarray(y_pred, float), 0, 1)
    ctp = p[y == 1].sum()
    cfp = p[y != 1].sum()
    precision = ctp / (ctp + cfp) if ctp + cfp else 0.0
    recall = ctp / (y == 1).sum()
    if precision > 0 and recall > 0:
        b2 = beta * beta
        return (1 + b2) * precision * recall / (b2 * precision + recall)
    return 0.0


def matthews_corrcoef(y_true, y_pred, **_):
    from sklearn.metrics import matthews_corrcoef as mcc

    return mcc(y_true, y_pred)


def lwlrap(y_true, y_pred, **_):
    from sklearn.metrics import label_ranking_average_precision_score

    truth = np.asarray(y_true, float) > 0
    keep = truth.sum(axis=1) > 0
    return label_ranking_average_precision_score(
        truth[keep], np.asarray(y_pred, float)[keep], sample_weight=truth[keep].sum(axis=1)
    )


def qa_answer_f1(y_true, y_pred, **_):
    from sklearn.metrics import f1_score

    t, p = [], []
    for valid, pred in zip(y_true, y_pred, strict=True):
        valid_set = set(_text(valid).split())
        pred = _text(pred).strip()
        p.append(1 if pred else 0)
        t.append(1 if (pred and pred in valid_set) or (not pred and valid_set) else 0)
    return f1_score(t, p, average="micro")


# regression


def rmse(y_true, y_pred, **_):
    from sklearn.metrics import root_mean_squared_error

    return root_mean_squared_error(y_true, y_pred)


def mae(y_true, y_pred, round_to_int=False, **_):
    from sklearn.metrics import mean_absolute_error

    value = mean_absolute_error(y_true, y_pred)
    return float(round(value)) if round_to_int else value


def mean_columnwise_rmsle(y_true, y_pred, **_):
    from sklearn.metrics import root_mean_squared_log_error

    y_true, y_pred = np.atleast_2d(y_true.T).T, np.atleast_2d(y_pred.T).T
    return float(np.mean([root_mean_squared_log_error(y_true[:, j], y_pred[:, j]) for j in range(y_true.shape[1])]))


def mcrmse(y_true, y_pred, **_):
    from sklearn.metrics import root_mean_squared_error

    y_true, y_pred = np.atleast_2d(y_true.T).T, np.atleast_2d(y_pred.T).T
    return float(np.mean([root_mean_squared_error(y_true[:, j], y_pred[:, j]) for j in range(y_true.shape[1])]))


def mean_log_mae_by_group(y_true, y_pred, groups, floor=None, **_):
    df = pd.DataFrame({"g": groups, "err": np.abs(np.asarray(y_true, float) - np.asarray(y_pred, float))})
    per_group = df.groupby("g")["err"].mean()
    if floor is not None:
        per_group = per_group.clip(lower=floor)
    with np.errstate(divide="ignore"):
        return float(np.log(per_group).mean())


def laplace_log_likelihood(
    y_true, y_pred, confidence, patients, weeks, sigma_floor=70.0, delta_cap=1000.0, last_n=3, **_
):
    df = pd.DataFrame(
        {
            "patient": patients,
            "week": np.asarray(weeks, float),
            "t": np.asarray(y_true, float),
            "p": np.asarray(y_pred, float),
            "c": np.asarray(confidence, float),
        }
    )
    df = df.sort_values(["patient", "week"], kind="stable").groupby("patient").tail(last_n)
    sigma = np.maximum(df["c"].fillna(0).to_numpy(), sigma_floor)
    delta = np.minimum(np.abs(df["t"].to_numpy() - df["p"].to_numpy()), delta_cap)
    metric = -np.sqrt(2) * delta / sigma - np.log(np.sqrt(2) * sigma)
    return float(np.mean(metric))


def mean_angular_error(y_true, y_pred, **_):
    az_t, zen_t = y_true[:, 0].astype(float), y_true[:, 1].astype(float)
    az_p, zen_p = y_pred[:, 0].astype(float), y_pred[:, 1].astype(float)
    x1, y1, z1 = np.sin(zen_t) * np.cos(az_t), np.sin(zen_t) * np.sin(az_t), np.cos(zen_t)
    x2, y2, z2 = np.sin(zen_p) * np.cos(az_p), np.sin(zen_p) * np.sin(az_p), np.cos(zen_p)
    dot = np.clip(x1 * x2 + y1 * y2 + z1 * z2, -1, 1)
    return float(np.mean(np.abs(np.arccos(dot))))


def haversine_p50_p95(y_true, y_pred, trips, **_):
    df = pd.DataFrame(
        {
            "trip": trips,
            "lat_t": y_true[:, 0].astype(float),
            "lon_t": y_true[:, 1].astype(float),
            "lat_p": y_pred[:, 0].astype(float),
            "lon_p": y_pred[:, 1].astype(float),
        }
    )
    scores = []
    for _, g in df.groupby("trip", sort=False):  # the published grader loops over trips
        lat1, lon1, lat2, lon2 = (np.radians(g[c].to_numpy()) for c in ("lat_t", "lon_t", "lat_p", "lon_p"))
        a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
        d = 2 * 6_371_000 * np.arcsin(np.sqrt(a))
        scores.append(np.mean([np.quantile(d, 0.5), np.quantile(d, 0.95)]))
    return float(np.mean(scores))


# correlation and ranking


def pearson(y_true, y_pred, **_):
    from scipy.stats import pearsonr

    return float(pearsonr(np.asarray(y_true, float), np.asarray(y_pred, float))[0])


def mean_columnwise_spearman(y_true, y_pred, **_):
    from scipy.stats import spearmanr

    y_true, y_pred = np.atleast_2d(y_true.T).T, np.atleast_2d(y_pred.T).T
    return float(np.mean([spearmanr(y_pred[:, j], y_true[:, j]).correlation for j in range(y_true.shape[1])]))


def _count_inversions(a):
    inversions = 0
    sorted_so_far: list[int] = []
    for i, u in enumerate(a):
        j = bisect.bisect(sorted_so_far, u)
        inversions += i - j
        sorted_so_far.insert(j, u)
    return inversions


def kendall_tau_pooled(y_true, y_pred, **_):
    total_inversions = 0
    total_2max = 0
    for truth, pred in zip(y_true, y_pred, strict=True):
        truth, pred = _text(truth).split(), _text(pred).split()
        ranks = [truth.index(x) for x in pred]  # the published loop: list.index per cell
        total_inversions += _count_inversions(ranks)
        n = len(truth)
        total_2max += n * (n - 1)
    return 1 - 4 * total_inversions / total_2max


def map_at_k(y_true, y_pred, k=5, **_):
    scores = []
    for truth, pred in zip(y_true, y_pred, strict=True):
        actual = set(_text(truth).split())
        predicted = _text(pred).split()[:k]
        score, hits = 0.0, 0
        for i, p in enumerate(predicted):
            if p in actual and p not in predicted[:i]:
                hits += 1
                score += hits / (i + 1.0)
        scores.append(score / min(len(actual), k) if actual else 0.0)
    return float(np.mean(scores))


# text


def mean_levenshtein(y_true, y_pred, **_):
    from rapidfuzz.distance import Levenshtein  # stands in for python-Levenshtein's distance

    return float(np.mean([Levenshtein.distance(_text(t), _text(p)) for t, p in zip(y_true, y_pred, strict=True)]))


def normalized_sequence_levenshtein(y_true, y_pred, **_):
    from rapidfuzz.distance import Levenshtein

    total, length = 0, 0
    for t, p in zip(y_true, y_pred, strict=True):
        truth = [int(x) for x in _text(t).split()]
        pred = [int(x) for x in _text(p).split()]
        total += Levenshtein.distance(truth, pred)
        length += len(truth)
    return total / length


def mean_word_jaccard(y_true, y_pred, both_empty=0.0, **_):
    scores = []
    for t, p in zip(y_true, y_pred, strict=True):
        a, b = set(_text(t).lower().split()), set(_text(p).lower().split())
        if not a and not b:  # tweet-sentiment's published grader divides by zero here
            scores.append(both_empty)
            continue
        c = a & b
        scores.append(len(c) / (len(a) + len(b) - len(c)))
    return float(np.mean(scores))


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


# detection


def _groups(cell: Any, size: int) -> list[list[str]]:
    tokens = _text(cell).split()
    if len(tokens) % size:
        raise ValueError(f"token count {len(tokens)} is not a multiple of {size}")
    return [tokens[i : i + size] for i in range(0, len(tokens), size)]


def coco_map(y_true, y_pred, iou_threshold=0.4, corners_as_xywh=True, **_):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def bbox(x1, y1, x2, y2):
        return [x1, y1, x2, y2] if corners_as_xywh else [x1, y1, x2 - x1, y2 - y1]

    images, gts, dts, cats = [], [], [], set()
    for i, (t, p) in enumerate(zip(y_true, y_pred, strict=True)):
        images.append({"id": i})
        for cls, _conf, *xy in _groups(t, 6):
            box = bbox(*map(float, xy))
            cats.add(int(cls))
            gts.append(
                {
                    "id": len(gts) + 1,
                    "image_id": i,
                    "category_id": int(cls),
                    "bbox": box,
                    "area": box[2] * box[3],
                    "iscrowd": 0,
                }
            )
        for cls, conf, *xy in _groups(p, 6):
            box = bbox(*map(float, xy))
            dts.append(
                {
                    "id": len(dts) + 1,
                    "image_id": i,
                    "category_id": int(cls),
                    "bbox": box,
                    "score": float(conf),
                    "area": box[2] * box[3],
                }
            )
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"images": images, "annotations": gts, "categories": [{"id": c} for c in sorted(cats)]}
        gt.createIndex()
        dt = gt.loadRes(dts) if dts else COCO()
        ev = COCOeval(gt, dt, "bbox")
        ev.params.iouThrs = np.array([iou_threshold])
        ev.params.catIds = sorted(cats)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return float(ev.stats[0])


def voc_map(y_true, y_pred, iou_threshold=0.5, **_):
    from sklearn.metrics import average_precision_score

    def iou(a, b):
        ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = ix * iy
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / union if union > 0 else 0.0

    truth_rows = [_groups(t, 6) for t in y_true]
    pred_rows = [_groups(p, 6) for p in y_pred]
    classes = sorted({g[0] for row in truth_rows for g in row})
    aps = []
    for cls in classes:
        labels, scores = [], []
        for truth, pred in zip(truth_rows, pred_rows, strict=True):
            gt = [list(map(float, g[2:])) for g in truth if g[0] == cls]
            dt = sorted(((float(g[1]), list(map(float, g[2:]))) for g in pred if g[0] == cls), key=lambda x: -x[0])
            used = [False] * len(gt)
            for conf, box in dt:
                best, best_iou = -1, iou_threshold
                for j, g in enumerate(gt):
                    if not used[j]:
                        v = iou(box, g)
                        if v > best_iou:
                            best, best_iou = j, v
                if best >= 0:
                    used[best] = True
                    labels.append(1)
                else:
                    labels.append(0)
                scores.append(conf)
            for u in used:
                if not u:
                    labels.append(1)
                    scores.append(0.0)
            if not gt and not dt:
                labels.append(0)
                scores.append(0.0)
        aps.append(average_precision_score(labels, scores) if any(labels) else 0.0)
    return float(np.mean(aps))


def map_3d(y_true, y_pred, **options):
    # One podium call per sample, as the published grader maps its scorer over samples.
    from podium.metrics import METRICS

    fn = METRICS["map_3d"].fn
    scores = [
        fn(np.array([t], dtype=object), np.array([p], dtype=object), **options)
        for t, p in zip(y_true, y_pred, strict=True)
    ]
    return float(np.mean(scores))


def point_in_box_f1(y_true, y_pred, **_):
    tp = fp = fn = 0
    for truth, preds in zip(y_true, y_pred, strict=True):
        truth, preds = _text(truth).split(), _text(preds).split()
        if not truth and not preds:
            continue
        if not truth:
            fp += len(preds) // 3
            continue
        if not preds:
            fn += len(truth) // 5
            continue
        t_label = np.array(truth[0::5])
        t_x, t_y = np.array(truth[1::5], float), np.array(truth[2::5], float)
        t_w, t_h = np.array(truth[3::5], float), np.array(truth[4::5], float)
        p_label = np.array(preds[0::3])
        p_x, p_y = np.array(preds[1::3], float), np.array(preds[2::3], float)
        unused = np.ones(len(p_label), bool)
        count = 0
        for xmin, xmax, ymin, ymax, label in zip(t_x, t_x + t_w, t_y, t_y + t_h, t_label, strict=True):
            matching = (xmin < p_x) & (xmax > p_x) & (ymin < p_y) & (ymax > p_y) & (p_label == label) & unused
            if matching.sum() == 0:
                continue
            count += 1
            unused[np.argmax(matching)] = False
        tp += count
        fn += len(t_label) - count
        fp += int(unused.sum())
    if tp + fp == 0 or tp + fn == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


METRICS = {
    name: fn
    for name, fn in list(globals().items())
    if callable(fn)
    and not name.startswith("_")
    and name not in {"rle_decode", "main", "grade"}
    and getattr(fn, "__module__", None) == __name__
}


# --------------------------------------------------------------------------------------------
# The grader: read, check, sort, compare ids, score.


def _read_answers(competition, data_dir: Path) -> pd.DataFrame:
    path = data_dir / competition.id / "prepared" / "private" / competition.answers
    load_answers = competition.hook("load_answers")
    if load_answers is not None:
        # Reuses podium's loader for answers that are not a plain table (JSONL, long format).
        frame = load_answers(path)
        df = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in frame.columns.items()})
        for col in df.columns:
            with contextlib.suppress(ValueError, TypeError):
                df[col] = pd.to_numeric(df[col])
        return df
    return pd.read_csv(path, float_precision="round_trip")


def _column(df: pd.DataFrame, spec: Any) -> np.ndarray:
    return df[spec].to_numpy()


def grade(submission_path: Path, ref: str, data_dir: Path) -> float:
    from podium import registry

    comp = registry.get(ref)
    answers = _read_answers(comp, data_dir)
    submission = pd.read_csv(submission_path, float_precision="round_trip")
    ids = list(comp.id_columns)
    sub_cols = [s for s, _ in comp.targets]
    ans_cols = [a for _, a in comp.targets]
    missing = [c for c in ids + sub_cols if c not in submission.columns]
    if missing:
        raise ValueError(f"submission lacks columns {missing}")
    if comp.matching.get("extra_ids"):
        submission = submission[submission.set_index(ids).index.isin(answers.set_index(ids).index)]
    if len(submission) != len(answers):
        raise ValueError(f"submission has {len(submission)} rows, answers {len(answers)}")
    rule = comp.checks.get("row_sum")
    if rule:
        sums = submission[list(rule["columns"])].sum(axis=1)
        if (np.abs(sums - 1) > float(rule.get("tolerance", 1e-6))).any():
            raise ValueError("probabilities must sum to 1 on every row")
    submission = submission.sort_values(ids, kind="stable").reset_index(drop=True)
    answers = answers.sort_values(ids, kind="stable").reset_index(drop=True)
    for c in ids:
        if not (submission[c].to_numpy() == answers[c].to_numpy()).all():
            raise ValueError(f"submission and answers {c} values differ")
    spec = comp.metric
    if spec.where:
        col = answers[spec.where["column"]]
        keep = (col == spec.where["equals"]) if "equals" in spec.where else (col != spec.where["not_equals"])
        answers, submission = (
            answers[keep.to_numpy()].reset_index(drop=True),
            submission[keep.to_numpy()].reset_index(drop=True),
        )
    for c in sub_cols:
        if submission[c].dtype == object or answers[ans_cols[sub_cols.index(c)]].dtype == object:
            submission[c] = submission[c].fillna("")
    for c in ans_cols:
        if answers[c].dtype == object:
            answers[c] = answers[c].fillna("")
    y_true = answers[ans_cols].to_numpy() if len(ans_cols) > 1 else answers[ans_cols[0]].to_numpy()
    y_pred = submission[sub_cols].to_numpy() if len(sub_cols) > 1 else submission[sub_cols[0]].to_numpy()
    inputs: dict[str, Any] = {}
    for key, source in spec.inputs.items():
        if isinstance(source, str):
            side, _, name = source.partition(".")
            inputs[key] = (answers if side == "answers" else submission)[name].to_numpy()
        else:
            ((side, names),) = source.items()
            inputs[key] = (answers if side == "answers" else submission)[list(names)].to_numpy()
    fn = METRICS[spec.name]
    return float(fn(y_true, y_pred, **inputs, **dict(spec.options)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submission")
    parser.add_argument("id")
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"competition_id": args.id, "score": None, "error": None}
    try:
        result["score"] = grade(Path(args.submission), args.id, Path(args.data_dir))
    except Exception as exc:  # the published harness: any exception = invalid submission
        result["error"] = f"{type(exc).__name__}: {exc}"
    score = result["score"]
    if score is not None and not math.isfinite(score):
        result["score"] = None
        result["error"] = result["error"] or f"non-finite score {score}"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.path.append(str(Path(__file__).resolve().parents[1] / "src"))  # after PYTHONPATH: a --src snapshot wins
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())

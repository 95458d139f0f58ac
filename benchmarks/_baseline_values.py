"""The baseline grader's metrics of values, orders and texts (errors, log likelihoods, angles, distances,
correlations, rank and edit distances, word overlap), written as the published graders compute them (see
``baseline.py``)."""

from __future__ import annotations

import bisect

import numpy as np
import pandas as pd
from _baseline_labels import _text

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

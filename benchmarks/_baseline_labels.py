"""The baseline grader's metrics of labels and probabilities (accuracy, AUCs, log losses, kappa, F-scores,
lwlrap, QA answer F1), written as the published graders compute them (see ``baseline.py``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd


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

"""Classification metrics: accuracy, AUC variants, log losses, kappa, MCC (F-scores: :mod:`podium.metrics.fscore`).

Every function takes arrays already aligned row by row by the grader and returns a float. Only
numpy is imported at module level; the few functions that need more import it themselves.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from podium.errors import InvalidSubmissionError
from podium.metrics._common import (
    AnyArray,
    BoolArray,
    FloatArray,
    check_consistent_length,
    encode_labels,
    mean_or_nan,
    unique,
)

__all__ = [
    "accuracy",
    "alaska_weighted_auc",
    "error_rate",
    "jigsaw_bias_auc",
    "kl_divergence",
    "log_loss",
    "matthews_corrcoef",
    "mean_columnwise_roc_auc",
    "quadratic_weighted_kappa",
    "roc_auc",
    "rsna_fracture_log_loss",
]


_RSNA_VERTEBRAE = ("C1", "C2", "C3", "C4", "C5", "C6", "C7")
_ALASKA_TPR_BREAKPOINTS = (0.0, 0.4, 1.0)
_ALASKA_WEIGHTS = (2.0, 1.0)


# --------------------------------------------------------------------------- helpers


def _binary_truth(y_true: AnyArray) -> BoolArray:
    """Boolean truth of a binary label array: the larger of its two values is positive."""
    values = unique(y_true)
    if values.size > 2:
        raise ValueError(f"binary truth expected, got {values.size} distinct values")
    return np.asarray(y_true == values[-1]) if values.size else np.zeros(0, dtype=bool)


def _auc(positive: BoolArray, score: FloatArray) -> float:
    """ROC AUC by the Mann-Whitney statistic on average ranks (ties count one half).

    NaN when the truth holds a single class (or no rows).
    """
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    if not np.all(np.isfinite(score)):
        raise ValueError("scores must be finite numbers")
    order = np.argsort(score, kind="stable")
    ordered = score[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.size]
    ranks = np.empty(ordered.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    rank_sum = float(ranks[positive].sum())
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def _defined_auc(y_true: AnyArray, y_score: FloatArray) -> float:
    """Binary ROC AUC that refuses a single-class truth (as sklearn does)."""
    check_consistent_length(y_true, y_score)
    value = _auc(_binary_truth(y_true), np.asarray(y_score, dtype=np.float64))
    if np.isnan(value):
        raise ValueError("ROC AUC is undefined: the truth holds a single class")
    return value


def _binary_log_loss(y: FloatArray, p_one: FloatArray, p_zero: FloatArray) -> FloatArray:
    """Per-cell log loss of 0/1 truth y given the (already clipped) probabilities of 1 and 0."""
    return -(y * np.log(p_one) + (1.0 - y) * np.log(p_zero))


# --------------------------------------------------------------------------- accuracy


def accuracy(y_true: AnyArray, y_pred: AnyArray) -> float:
    """Share of rows whose prediction equals the truth (labels of any type).

    Used by cassava, cdiscount, iwildcam-2020, spaceship-titanic, text-normalization-*,
    tensorflow-speech, paddy, ml2021spring-hw2, movie-review, tabular-playground-series-dec-2021.
    """
    check_consistent_length(y_true, y_pred)
    return mean_or_nan(np.asarray(y_true == y_pred, dtype=bool))


def error_rate(y_true: AnyArray, y_pred: AnyArray, *, first_token: bool = False, integer: bool = False) -> float:
    """1 - accuracy; with ``first_token`` only the first whitespace token of each predicted
    string is compared (an empty prediction compares as "").

    With ``integer`` both sides are compared as Python integers (``int()``: "05" equals "5"), and
    a prediction whose (first) token is not an integer, or that has no token, is invalid.

    Used by inaturalist-2019-fgvc6 (first_token and integer: "5 17 3" counts as 5).
    """
    if first_token:
        y_pred = np.array([(s.split(None, 1) or [""])[0] for s in y_pred.tolist()], dtype=object)
    if integer:
        y_true = np.array([int(v) for v in y_true.tolist()], dtype=object)
        y_pred = _integers(y_pred)
    return 1.0 - accuracy(y_true, y_pred)


def _integers(cells: AnyArray) -> AnyArray:
    values: list[int | None] = []
    bad = []
    for row, cell in enumerate(cells.tolist()):
        try:
            values.append(int(cell))
        except ValueError:
            values.append(None)
            bad.append(f"row {row + 1}: {cell!r}")
    if bad:
        raise InvalidSubmissionError(
            f"{len(bad)} prediction(s) are not integers (the first token of each cell is read with int())",
            examples=bad,
            fix="write the predicted class id as an integer (a space-separated list may follow it)",
        )
    return np.array(values, dtype=object)


# --------------------------------------------------------------------------- AUC family


def roc_auc(y_true: AnyArray, y_score: FloatArray) -> float:
    """Binary ROC AUC, equal to sklearn ``roc_auc_score`` (ties share average ranks).

    A single-class truth raises ValueError. Used by the binary-probability competitions
    (aerial-cactus, histopathologic, siim-isic, seti, tabular-playground-may-2022, ...).
    """
    return _defined_auc(y_true, y_score)


def mean_columnwise_roc_auc(y_true: AnyArray, y_score: FloatArray) -> float:
    """Mean over columns of the binary ROC AUC of each (n, k) target column.

    Used by plant-pathology-2020, ranzcr-clip, playground-series-s3e18 and
    jigsaw-toxic-comment (its -1 rows are removed by the grader).
    """
    if y_true.ndim != 2 or y_true.shape != y_score.shape:
        raise ValueError(f"2-D arrays of equal shape expected, got {y_true.shape}, {y_score.shape}")
    return float(np.mean([_defined_auc(y_true[:, j], y_score[:, j]) for j in range(y_true.shape[1])]))


def alaska_weighted_auc(y_true: AnyArray, y_score: FloatArray) -> float:
    """ALASKA2 weighted AUC: the ROC area in TPR bands [0, 0.4] and [0.4, 1] weighted 2 and 1,
    normalised by 1.4 so that a perfect ranking scores 1.

    Band [lo, hi]: the ROC points with lo <= tpr <= hi (breakpoints missing from the curve are
    inserted with linearly interpolated FPR) plus the point (1, hi), shifted down by lo, integrated
    by the trapezoid rule. Used by alaska2-image-steganalysis.
    """
    check_consistent_length(y_true, y_score)
    positive = _binary_truth(y_true)
    n_pos = int(np.count_nonzero(positive))
    if n_pos == 0 or n_pos == positive.size:
        raise ValueError("weighted AUC is undefined: the truth holds a single class")
    score = np.asarray(y_score, dtype=np.float64)
    if not np.all(np.isfinite(score)):
        raise ValueError("scores must be finite numbers")
    # ROC points at every distinct threshold, from the highest score down, after (0, 0)
    order = np.argsort(-score, kind="stable")
    ordered = score[order]
    last_of_threshold = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True])
    tps = np.cumsum(positive[order])[last_of_threshold]
    fps = last_of_threshold + 1 - tps
    tpr = np.r_[0.0, tps / n_pos]
    fpr = np.r_[0.0, fps / (positive.size - n_pos)]
    for breakpoint_ in _ALASKA_TPR_BREAKPOINTS:
        if breakpoint_ not in tpr:  # first point above it and the one before bracket it
            i = int(np.searchsorted(tpr, breakpoint_, side="right"))
            share = (breakpoint_ - tpr[i - 1]) / (tpr[i] - tpr[i - 1])
            fpr = np.insert(fpr, i, fpr[i - 1] + share * (fpr[i] - fpr[i - 1]))
            tpr = np.insert(tpr, i, breakpoint_)
    bands = pairwise(_ALASKA_TPR_BREAKPOINTS)
    total = normalisation = 0.0
    for (lo, hi), weight in zip(bands, _ALASKA_WEIGHTS, strict=True):
        inside = (lo <= tpr) & (tpr <= hi)
        x = np.r_[fpr[inside], 1.0]
        y = np.r_[tpr[inside], hi] - lo
        total += weight * float(np.trapezoid(y, x))
        normalisation += weight * (hi - lo)
    return total / normalisation


def jigsaw_bias_auc(
    y_true: FloatArray,
    y_pred: FloatArray,
    *,
    identities: FloatArray,
    binarize_predictions: bool = True,
    power: float = -5.0,
    overall_weight: float = 0.25,
) -> float:
    """Jigsaw bias-weighted AUC: ``w * overall AUC + (1 - w) * mean of three power means`` (p=-5)
    of the per-identity subgroup, BPSN and BNSP AUCs.

    Truth toxicity and identities are binarised with >= 0.5 (NaN identity -> not a member).
    ``binarize_predictions=True`` reproduces the published grader (predictions also binarised at
    0.5); False scores the raw predictions, as Kaggle did. As in the Kaggle reference, an AUC that
    is undefined (a single class among its rows, or no rows) is NaN and makes the score NaN.
    Used by jigsaw-unintended-bias-in-toxicity-classification.
    """
    check_consistent_length(y_true, y_pred, identities)
    if identities.ndim != 2:
        raise ValueError(f"identities must be 2-D (rows, identities), got shape {identities.shape}")
    toxic = np.asarray(y_true >= 0.5)
    score = (y_pred >= 0.5).astype(np.float64) if binarize_predictions else y_pred
    members = np.asarray(identities >= 0.5)  # NaN compares False: not a member
    families = np.empty((3, members.shape[1]))
    for j, member in enumerate(members.T):
        families[0, j] = _auc(toxic[member], score[member])
        bpsn = member ^ toxic  # non-toxic members + toxic non-members
        families[1, j] = _auc(toxic[bpsn], score[bpsn])
        bnsp = ~bpsn  # toxic members + non-toxic non-members
        families[2, j] = _auc(toxic[bnsp], score[bnsp])
    with np.errstate(divide="ignore"):  # an AUC of 0 gives inf, whose power mean is 0
        power_means = np.mean(families**power, axis=1) ** (1.0 / power)
    overall = _auc(toxic, score)
    return float(overall_weight * overall + (1.0 - overall_weight) * np.mean(power_means))


# --------------------------------------------------------------------------- log losses


def log_loss(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Log loss equal to sklearn ``log_loss`` with default arguments (sklearn 1.9).

    1-D: 0/1 truth (the larger label is positive) against P(positive); 2-D: one-hot truth against
    a probability matrix. Probabilities are clipped to [eps, 1 - eps] (float64 machine epsilon) and
    NOT renormalised (rows that do not sum to one are scored as given, like sklearn >= 1.5).
    Values outside [0, 1] raise ValueError, as in sklearn. Used by dog-breed, dogs-vs-cats,
    leaf-classification, lmsys, spooky-author, statoil and others.
    """
    check_consistent_length(y_true, y_pred)
    prob = np.asarray(y_pred, dtype=np.float64)
    if prob.size and (prob.min() < 0.0 or prob.max() > 1.0):
        raise ValueError("probabilities must lie in [0, 1]")
    eps = float(np.finfo(np.float64).eps)
    if y_true.ndim == 1:
        positive = _binary_truth(y_true)
        if unique(positive).size < 2:
            raise ValueError("log loss needs both classes in a 1-D truth")
        # like sklearn: the columns [1 - p, p] are clipped separately
        p_one, p_zero = np.clip(prob, eps, 1.0 - eps), np.clip(1.0 - prob, eps, 1.0 - eps)
        return mean_or_nan(_binary_log_loss(positive.astype(np.float64), p_one, p_zero))
    if y_true.shape != prob.shape:
        raise ValueError(f"truth and prediction shapes differ: {y_true.shape} vs {prob.shape}")
    clipped = np.clip(prob, eps, 1.0 - eps)
    return mean_or_nan(-np.sum(y_true * np.log(clipped), axis=1))


def rsna_fracture_log_loss(
    y_true: FloatArray, y_pred: FloatArray, *, studies: AnyArray, label_types: AnyArray
) -> float:
    """RSNA 2022 weighted binary log loss: per study, sum(w * loss) / sum(w) over its cells
    (patient_overall w = 7 negative / 14 positive, C1..C7 w = 1 / 2), then the mean over studies.

    Predictions are clipped to [1e-15, 1 - 1e-15]. Used by rsna-2022-cervical-spine-fracture.
    """
    check_consistent_length(y_true, y_pred, studies, label_types)
    overall = np.asarray(label_types == "patient_overall", dtype=bool)
    known = overall | np.isin(label_types, _RSNA_VERTEBRAE)
    if not np.all(known):
        raise ValueError(f"unknown label types: {sorted(set(label_types[~known].tolist()))[:5]}")
    truth = np.asarray(y_true, dtype=np.float64)
    if not np.all((truth == 0.0) | (truth == 1.0)):
        raise ValueError("truth must be 0 or 1")
    weight = np.where(overall, 7.0, 1.0) * (1.0 + truth)
    prob = np.clip(np.asarray(y_pred, dtype=np.float64), 1e-15, 1.0 - 1e-15)
    loss = _binary_log_loss(truth, prob, 1.0 - prob)
    _, study = np.unique(studies, return_inverse=True)
    study = study.reshape(-1)
    return mean_or_nan(np.bincount(study, weight * loss) / np.bincount(study, weight))


def kl_divergence(y_true: FloatArray, y_pred: FloatArray, *, eps: float = 1e-15) -> float:
    """Mean over rows of KL(p || q): p = vote counts normalised per row, q = predictions clipped
    to [eps, 1 - eps]; cells with p == 0 contribute 0.

    Used by hms-harmful-brain-activity-classification.
    """
    if y_true.ndim != 2 or y_true.shape != y_pred.shape:
        raise ValueError(f"2-D arrays of equal shape expected, got {y_true.shape}, {y_pred.shape}")
    totals = y_true.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every truth row needs a positive vote count")
    p = y_true / totals
    q = np.clip(y_pred, eps, 1.0 - eps)
    positive = p > 0
    terms = np.zeros_like(p)
    terms[positive] = p[positive] * np.log(p[positive] / q[positive])
    return mean_or_nan(terms.sum(axis=1))


# --------------------------------------------------------------------------- label agreement


def quadratic_weighted_kappa(y_true: AnyArray, y_pred: AnyArray) -> float:
    """Cohen's kappa with quadratic weights, equal to sklearn
    ``cohen_kappa_score(y_pred, y_true, weights="quadratic")``.

    The weights use positions in the sorted union of the values as given (no rounding). NaN when
    only one label occurs. Used by aptos2019 and learning-agency-lab-automated-essay-scoring-2.
    """
    check_consistent_length(y_true, y_pred)
    true_code, pred_code, n_labels = encode_labels(y_true, y_pred)
    if n_labels < 2:
        return float("nan")
    t = true_code.astype(np.float64)
    p = pred_code.astype(np.float64)
    # expected disagreement under independent marginals: sum_r (p_r - mean t)^2 + n * var(t)
    expected = np.sum((p - t.mean()) ** 2) + np.sum((t - t.mean()) ** 2)
    return float(1.0 - np.sum((p - t) ** 2) / expected)


def matthews_corrcoef(y_true: AnyArray, y_pred: AnyArray) -> float:
    """Matthews correlation coefficient (multiclass form), equal to sklearn's; 0.0 where it is
    undefined, as sklearn returns. Used by nfl-player-contact-detection.
    """
    n = check_consistent_length(y_true, y_pred)
    true_code, pred_code, n_labels = encode_labels(y_true, y_pred)
    t_sum = np.bincount(true_code, minlength=n_labels).astype(np.float64)
    p_sum = np.bincount(pred_code, minlength=n_labels).astype(np.float64)
    n_correct = float(np.count_nonzero(true_code == pred_code))
    cov_tp = n_correct * n - float(t_sum @ p_sum)
    cov_pp = float(n) ** 2 - float(p_sum @ p_sum)
    cov_tt = float(n) ** 2 - float(t_sum @ t_sum)
    if cov_pp * cov_tt == 0:
        return 0.0
    return float(cov_tp / np.sqrt(cov_pp * cov_tt))

"""Regression metrics: errors between numeric predictions and numeric answers.

Every function takes row-aligned float arrays (1-D for one target, 2-D ``(n, k)`` for several)
and returns a float. Only numpy is imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from podium.errors import InvalidSubmissionError
from podium.metrics._common import FloatArray, check_pair, factorize

__all__ = [
    "haversine_p50_p95",
    "laplace_log_likelihood",
    "mae",
    "mcrmse",
    "mean_angular_error",
    "mean_columnwise_rmsle",
    "mean_log_mae_by_group",
    "rmse",
]


EARTH_RADIUS_M = 6_371_000.0


def _pair(
    y_true: npt.ArrayLike, y_pred: npt.ArrayLike, *, ndim: int, width: int | None = None
) -> tuple[FloatArray, FloatArray]:
    """Both arrays as float64 with the same non-empty shape of ``ndim`` dimensions."""
    true, pred = check_pair(y_true, y_pred, ndim=ndim)
    if true.shape[0] == 0:
        raise ValueError("no rows to score")
    if width is not None and true.shape[1] != width:
        raise ValueError(f"expected {width} columns, got {true.shape[1]}")
    return true, pred


def _aligned(values: npt.ArrayLike, n: int, name: str) -> npt.NDArray[Any]:
    """An option array that must hold one value per row."""
    array = np.asarray(values)
    if array.shape != (n,):
        raise ValueError(f"{name} must be 1-D with {n} values, got shape {array.shape}")
    return array


def _column_rmse(true: FloatArray, pred: FloatArray) -> FloatArray:
    """Root mean squared error of each column (a 0-d array for 1-D input)."""
    return np.asarray(np.sqrt(np.mean((true - pred) ** 2, axis=0)), dtype=np.float64)


def rmse(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Root mean squared error of 1-D arrays (sklearn ``root_mean_squared_error``).

    Used by denoising-dirty-documents, new-york-city-taxi-fare-prediction,
    petfinder-pawpularity-score.
    """
    true, pred = _pair(y_true, y_pred, ndim=1)
    return float(_column_rmse(true, pred))


def mae(y_true: FloatArray, y_pred: FloatArray, *, round_to_int: bool = False) -> float:
    """Mean absolute error of 1-D arrays; ``round_to_int`` rounds it like ``int(round(mae))``.

    Used by predict-volcanic-eruptions-ingv-oe (rounded) and ventilator-pressure-prediction
    (plain, on the inspiratory rows the grader keeps).
    """
    true, pred = _pair(y_true, y_pred, ndim=1)
    error = float(np.mean(np.abs(true - pred)))
    return float(round(error)) if round_to_int else error


def mean_columnwise_rmsle(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Mean over columns of the root mean squared log error (log1p), nomad2018.

    Each column equals sklearn ``root_mean_squared_log_error``. The installed scikit-learn
    (1.9) rejects only values <= -1, where ``log1p`` is undefined (releases before 1.6 rejected
    every negative value); this follows the installed rule: a prediction <= -1 is an invalid
    submission, an answer <= -1 is a ValueError.
    """
    true, pred = _pair(y_true, y_pred, ndim=2)
    if np.any(true <= -1):
        raise ValueError("answers contain values <= -1; RMSLE is undefined for them")
    bad = np.argwhere(pred <= -1)
    if bad.size:
        raise InvalidSubmissionError(
            "predictions must be greater than -1 for RMSLE",
            examples=[f"row {row} column {col}: {pred[row, col]!r}" for row, col in bad[:5]],
            fix="predict values greater than -1 (the targets are non-negative)",
        )
    return float(np.mean(_column_rmse(np.log1p(true), np.log1p(pred))))


def mcrmse(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Mean column-wise RMSE of 2-D arrays (stanford-covid-vaccine, scored rows/columns only)."""
    true, pred = _pair(y_true, y_pred, ndim=2)
    return float(np.mean(_column_rmse(true, pred)))


def mean_log_mae_by_group(
    y_true: FloatArray,
    y_pred: FloatArray,
    *,
    groups: npt.NDArray[Any],
    floor: float | None = None,
) -> float:
    """Unweighted mean over groups of ``log(MAE of the group)`` (champs-scalar-coupling).

    ``floor=None`` reproduces the published grader: a perfectly predicted group gives ``-inf``
    and so does the score. ``floor=1e-9`` is Kaggle's definition ``log(max(MAE, 1e-9))``.
    """
    true, pred = _pair(y_true, y_pred, ndim=1)
    _, group_index = factorize(_aligned(groups, true.size, "groups"))
    group_mae = np.bincount(group_index, weights=np.abs(true - pred)) / np.bincount(group_index)
    if floor is not None:
        group_mae = np.maximum(group_mae, floor)
    with np.errstate(divide="ignore"):
        return float(np.mean(np.log(group_mae)))


def laplace_log_likelihood(
    y_true: FloatArray,
    y_pred: FloatArray,
    *,
    confidence: FloatArray,
    patients: npt.NDArray[Any],
    weeks: FloatArray,
    last_n: int = 3,
    sigma_floor: float = 70.0,
    delta_cap: float = 1000.0,
) -> float:
    """Modified Laplace log-likelihood (osic-pulmonary-fibrosis-progression); higher is better.

    Rows with NaN ``y_true`` are not scored; of the rest only each patient's last ``last_n``
    rows by week count. Per row, with ``sigma = max(confidence, sigma_floor)`` (NaN confidence
    counts as ``sigma_floor``) and ``delta = min(|true - pred|, delta_cap)``, the score is
    ``-sqrt(2) * delta / sigma - ln(sqrt(2) * sigma)``; the result is the mean over scored rows
    (NaN when no row is scored, none given included: version 1 scores only the rows a submission
    holds, and the published mean of none is NaN).
    """
    true, pred = check_pair(y_true, y_pred, ndim=1)
    n = true.size
    conf = _aligned(confidence, n, "confidence").astype(np.float64)
    week = _aligned(weeks, n, "weeks").astype(np.float64)
    _, patient = np.unique(_aligned(patients, n, "patients"), return_inverse=True)

    rows = np.flatnonzero(~np.isnan(true))
    rows = rows[np.lexsort((week[rows], patient[rows]))]  # by patient, then week
    counts = np.bincount(patient[rows])
    group_end = np.cumsum(counts)[patient[rows]]  # one past each row's patient block
    rows = rows[group_end - np.arange(rows.size) <= last_n]
    if rows.size == 0:
        return float("nan")

    sigma = np.fmax(conf[rows], sigma_floor)
    delta = np.minimum(np.abs(true[rows] - pred[rows]), delta_cap)
    score = -np.sqrt(2.0) * delta / sigma - np.log(np.sqrt(2.0) * sigma)
    return float(np.mean(score))


def _direction_dot(true: FloatArray, pred: FloatArray) -> FloatArray:
    """Row-wise dot product of the unit vectors of two ``[azimuth, zenith]`` arrays.

    ``x1*x2 + y1*y2 + z1*z2`` in that order, as the sum over stacked vectors adds them, but one
    component at a time, without the two (n, 3) stacks and their product.
    """
    sin_true, sin_pred = np.sin(true[:, 1]), np.sin(pred[:, 1])
    dot = (sin_true * np.cos(true[:, 0])) * (sin_pred * np.cos(pred[:, 0]))
    dot += (sin_true * np.sin(true[:, 0])) * (sin_pred * np.sin(pred[:, 0]))
    dot += np.cos(true[:, 1]) * np.cos(pred[:, 1])
    return dot


def mean_angular_error(y_true: FloatArray, y_pred: FloatArray) -> float:
    """Mean angle in radians between true and predicted directions (icecube-neutrinos-in-deep-ice).

    Columns are ``[azimuth, zenith]``; each row becomes a unit vector, the dot product is clipped
    to [-1, 1] and its arccos averaged.
    """
    true, pred = _pair(y_true, y_pred, ndim=2, width=2)
    dot = _direction_dot(true, pred)
    return float(np.mean(np.arccos(np.clip(dot, -1.0, 1.0, out=dot), out=dot)))


def _haversine_m(true: FloatArray, pred: FloatArray) -> FloatArray:
    """Great-circle distance in metres between ``[lat, lon]`` rows given in degrees."""
    lat1, lon1 = np.radians(true[:, 0]), np.radians(true[:, 1])
    lat2, lon2 = np.radians(pred[:, 0]), np.radians(pred[:, 1])
    a = np.sin((lat2 - lat1) / 2) ** 2
    a += np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return np.asarray(2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(a)), dtype=np.float64)


def haversine_p50_p95(y_true: FloatArray, y_pred: FloatArray, *, trips: npt.NDArray[Any]) -> float:
    """Mean over trips of the mean of the 50th and 95th percentile haversine error in metres.

    smartphone-decimeter-2022: columns ``[lat, lon]`` in degrees, a sphere of radius 6,371,000 m,
    numpy linear quantiles per trip, unweighted mean over trips.
    """
    true, pred = _pair(y_true, y_pred, ndim=2, width=2)
    _, trip = np.unique(_aligned(trips, true.shape[0], "trips"), return_inverse=True)
    order = np.argsort(trip, kind="stable")
    distances = _haversine_m(true, pred)[order]
    per_trip = np.split(distances, np.cumsum(np.bincount(trip))[:-1])
    scores = [np.mean(np.quantile(d, [0.5, 0.95])) for d in per_trip]
    return float(np.mean(scores))

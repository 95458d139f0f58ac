"""Tests of podium.metrics.regression: hand examples, references, perfect scores, row order."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metric_helpers import FAST
from sklearn.metrics import (
    mean_absolute_error,
    root_mean_squared_error,
    root_mean_squared_log_error,
)

from podium.errors import InvalidSubmissionError
from podium.metrics.regression import (
    haversine_p50_p95,
    laplace_log_likelihood,
    mae,
    mcrmse,
    mean_angular_error,
    mean_columnwise_rmsle,
    mean_log_mae_by_group,
    rmse,
)

finite = st.floats(-1e6, 1e6, allow_nan=False)


def arr(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


@st.composite
def float_pairs(draw: st.DrawFn, columns: int = 0, elements: st.SearchStrategy[float] = finite):
    """(y_true, y_pred, permutation): 1-D when columns == 0, else (n, columns)."""
    n = draw(st.integers(1, 30))
    shape = (n,) if columns == 0 else (n, columns)
    size = int(np.prod(shape))
    true = np.array(draw(st.lists(elements, min_size=size, max_size=size))).reshape(shape)
    pred = np.array(draw(st.lists(elements, min_size=size, max_size=size))).reshape(shape)
    perm = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    return true, pred, perm


# ---------------------------------------------------------------- rmse / mae / mcrmse


def test_rmse_hand_example() -> None:
    assert rmse(arr(1, 2, 3), arr(1, 2, 5)) == pytest.approx(math.sqrt(4 / 3))
    assert rmse(arr(7), arr(7)) == 0.0


def test_rmse_rejects_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="same shape"):
        rmse(arr(1, 2), arr(1, 2, 3))
    with pytest.raises(ValueError, match="no rows"):
        rmse(arr(), arr())


@FAST
@given(float_pairs())
def test_rmse_matches_sklearn_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    assert rmse(true, pred) == pytest.approx(root_mean_squared_error(true, pred), rel=1e-9)
    assert rmse(true[perm], pred[perm]) == pytest.approx(rmse(true, pred), rel=1e-9)
    assert rmse(true, true.copy()) == 0.0


def test_mae_hand_example_and_rounding() -> None:
    assert mae(arr(0, 0, 0), arr(1, -2, 3)) == 2.0
    assert mae(arr(0, 0), arr(1, 2)) == 1.5
    assert mae(arr(0, 0), arr(1, 2), round_to_int=True) == 2.0  # round half to even: 1.5 -> 2
    assert mae(arr(0, 0), arr(2, 3), round_to_int=True) == 2.0  # 2.5 -> 2, as int(round(2.5))
    assert mae(arr(0), arr(24402200.4), round_to_int=True) == 24402200.0


@FAST
@given(float_pairs(), st.booleans())
def test_mae_matches_sklearn_and_ignores_row_order(case, round_to_int: bool) -> None:
    true, pred, perm = case
    expected = mean_absolute_error(true, pred)
    expected = float(round(expected)) if round_to_int else expected
    got = mae(true, pred, round_to_int=round_to_int)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert mae(true[perm], pred[perm]) == pytest.approx(mae(true, pred), rel=1e-9)
    assert mae(true, true.copy(), round_to_int=round_to_int) == 0.0


def test_mcrmse_hand_example() -> None:
    true = np.array([[0.0, 0.0], [0.0, 0.0]])
    pred = np.array([[1.0, 3.0], [1.0, -3.0]])
    assert mcrmse(true, pred) == pytest.approx((1.0 + 3.0) / 2)
    with pytest.raises(ValueError):
        mcrmse(arr(1, 2), arr(1, 2))  # 1-D is not the contract


@FAST
@given(float_pairs(columns=3))
def test_mcrmse_matches_sklearn_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    expected = np.mean(root_mean_squared_error(true, pred, multioutput="raw_values"))
    assert mcrmse(true, pred) == pytest.approx(expected, rel=1e-9)
    assert mcrmse(true[perm], pred[perm]) == pytest.approx(mcrmse(true, pred), rel=1e-9)
    assert mcrmse(true, true.copy()) == 0.0


# ---------------------------------------------------------------- rmsle


def test_rmsle_hand_example() -> None:
    true = np.array([[0.0, math.e - 1], [0.0, math.e - 1]])
    pred = np.array([[math.e - 1, math.e - 1], [0.0, math.e**2 - 1]])
    # column 0: log errors 1, 0 -> sqrt(1/2); column 1: 0, 1 -> sqrt(1/2)
    assert mean_columnwise_rmsle(true, pred) == pytest.approx(math.sqrt(0.5))


def test_rmsle_follows_installed_sklearn_rule() -> None:
    true = np.array([[1.0, 2.0], [3.0, 4.0]])
    pred = np.array([[-0.5, 2.0], [3.0, 4.0]])  # negative but > -1: sklearn 1.9 scores it
    expected = np.mean(root_mean_squared_log_error(true, pred, multioutput="raw_values"))
    assert mean_columnwise_rmsle(true, pred) == pytest.approx(expected)
    pred[1, 1] = -1.0
    with pytest.raises(InvalidSubmissionError, match="row 1 column 1") as info:
        mean_columnwise_rmsle(true, pred)
    assert info.value.fix
    with pytest.raises(ValueError, match="-1"):
        root_mean_squared_log_error(true, pred)


def test_rmsle_bad_answers_are_not_the_submissions_fault() -> None:
    true = np.array([[-2.0, 1.0]])
    with pytest.raises(ValueError) as info:
        mean_columnwise_rmsle(true, np.array([[1.0, 1.0]]))
    assert not isinstance(info.value, InvalidSubmissionError)


@FAST
@given(float_pairs(columns=2, elements=st.floats(0, 1e4, allow_nan=False)))
def test_rmsle_matches_sklearn_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    expected = np.mean(root_mean_squared_log_error(true, pred, multioutput="raw_values"))
    assert mean_columnwise_rmsle(true, pred) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert mean_columnwise_rmsle(true[perm], pred[perm]) == pytest.approx(
        mean_columnwise_rmsle(true, pred), rel=1e-9, abs=1e-12
    )
    assert mean_columnwise_rmsle(true, true.copy()) == 0.0


# ---------------------------------------------------------------- log MAE by group


def slow_log_mae(true, pred, groups, floor):
    errors: dict[object, list[float]] = {}
    for t, p, g in zip(true, pred, groups, strict=True):
        errors.setdefault(g, []).append(abs(t - p))
    logs = []
    for values in errors.values():
        group_mae = sum(values) / len(values)
        group_mae = group_mae if floor is None else max(group_mae, floor)
        logs.append(math.log(group_mae) if group_mae > 0 else -math.inf)
    return sum(logs) / len(logs)


def test_log_mae_hand_example() -> None:
    groups = np.array(["1JHC", "2JHH", "1JHC"], dtype=object)
    score = mean_log_mae_by_group(arr(0, 0, 0), arr(1, math.e, 3), groups=groups)
    assert score == pytest.approx((math.log(2) + 1) / 2)


def test_log_mae_perfect_group_without_and_with_floor() -> None:
    groups = np.array(["a", "a", "b"], dtype=object)
    true, pred = arr(1, 2, 3), arr(1, 2, 4)
    assert mean_log_mae_by_group(true, pred, groups=groups) == -math.inf
    floored = mean_log_mae_by_group(true, pred, groups=groups, floor=1e-9)
    assert floored == pytest.approx((math.log(1e-9) + 0.0) / 2)
    assert mean_log_mae_by_group(true, true, groups=groups, floor=1e-9) == pytest.approx(math.log(1e-9))


@FAST
@given(float_pairs(), st.data(), st.sampled_from([None, 1e-9]))
def test_log_mae_matches_slow_reference(case, data, floor) -> None:
    true, pred, perm = case
    groups = np.array(
        data.draw(st.lists(st.sampled_from("abcd"), min_size=true.size, max_size=true.size)),
        dtype=object,
    )
    expected = slow_log_mae(true.tolist(), pred.tolist(), groups.tolist(), floor)
    got = mean_log_mae_by_group(true, pred, groups=groups, floor=floor)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    permuted = mean_log_mae_by_group(true[perm], pred[perm], groups=groups[perm], floor=floor)
    assert permuted == pytest.approx(got, rel=1e-9, abs=1e-9)


# ---------------------------------------------------------------- Laplace log-likelihood


def laplace_row(true: float, pred: float, confidence: float) -> float:
    sigma = 70.0 if math.isnan(confidence) else max(confidence, 70.0)
    delta = min(abs(true - pred), 1000.0)
    return -math.sqrt(2) * delta / sigma - math.log(math.sqrt(2) * sigma)


def slow_laplace(true, pred, conf, patients, weeks, last_n=3):
    by_patient: dict[str, list[tuple[float, int]]] = {}
    for i, (t, p, w) in enumerate(zip(true, patients, weeks, strict=True)):
        if not math.isnan(t):
            by_patient.setdefault(p, []).append((w, i))
    rows = [i for visits in by_patient.values() for _, i in sorted(visits)[-last_n:]]
    if not rows:
        return math.nan
    return sum(laplace_row(true[i], pred[i], conf[i]) for i in rows) / len(rows)


def test_laplace_hand_example() -> None:
    nan = math.nan
    true = arr(nan, 2000, 2100, 2200, 2300, 3000)
    pred = arr(0, 0, 2000, 2300, 1000, 3000)
    conf = arr(100, 100, 100, 50, nan, 200)
    patients = np.array(["A", "A", "A", "A", "A", "B"], dtype=object)
    weeks = arr(10, -3, 5, 8, 6, 0)  # patient A scored: weeks 5, 6, 8 (week -3 is the 4th last)
    expected = (
        laplace_row(2100, 2000, 100) + laplace_row(2300, 1000, nan) + laplace_row(2200, 2300, 50)
    ) / 4 + laplace_row(3000, 3000, 200) / 4
    score = laplace_log_likelihood(true, pred, confidence=conf, patients=patients, weeks=weeks)
    assert score == pytest.approx(expected)
    # the capped delta and the sigma floor at work
    assert laplace_row(2300, 1000, nan) == pytest.approx(-math.sqrt(2) * 1000 / 70 - math.log(math.sqrt(2) * 70))


def test_laplace_perfect_prediction_and_no_scored_rows() -> None:
    true = arr(2000, 2100)
    kwargs = {"confidence": arr(70, 70), "patients": np.array(["A", "A"]), "weeks": arr(1, 2)}
    assert laplace_log_likelihood(true, true, **kwargs) == pytest.approx(-math.log(math.sqrt(2) * 70))
    assert math.isnan(laplace_log_likelihood(arr(math.nan, math.nan), true, **kwargs))
    none = {"confidence": arr(), "patients": np.array([], dtype=object), "weeks": arr()}
    assert math.isnan(laplace_log_likelihood(arr(), arr(), **none))  # osic@1 scores only the rows it is given


@FAST
@given(st.data())
def test_laplace_matches_slow_reference_and_ignores_row_order(data) -> None:
    n = data.draw(st.integers(1, 25))
    values = st.floats(1000, 4000, allow_nan=False)
    true = np.array(data.draw(st.lists(st.one_of(values, st.just(math.nan)), min_size=n, max_size=n)))
    pred = np.array(data.draw(st.lists(values, min_size=n, max_size=n)))
    conf = np.array(data.draw(st.lists(st.one_of(st.floats(0, 500), st.just(math.nan)), min_size=n, max_size=n)))
    patients = np.array(data.draw(st.lists(st.sampled_from("PQR"), min_size=n, max_size=n)))
    weeks = np.array(data.draw(st.lists(st.integers(-5, 100), min_size=n, max_size=n, unique=True)))
    last_n = data.draw(st.integers(1, 4))
    perm = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)

    def score(order: np.ndarray) -> float:
        return laplace_log_likelihood(
            true[order],
            pred[order],
            confidence=conf[order],
            patients=patients[order],
            weeks=weeks[order],
            last_n=last_n,
        )

    expected = slow_laplace(true.tolist(), pred.tolist(), conf.tolist(), patients, weeks, last_n)
    identity = np.arange(n)
    if math.isnan(expected):
        assert math.isnan(score(identity))
    else:
        assert score(identity) == pytest.approx(expected, rel=1e-9)
        assert score(perm) == pytest.approx(expected, rel=1e-9)


# ---------------------------------------------------------------- angular error


def slow_angle(az1: float, zen1: float, az2: float, zen2: float) -> float:
    dot = math.sin(zen1) * math.sin(zen2) * math.cos(az1 - az2) + math.cos(zen1) * math.cos(zen2)
    return math.acos(max(-1.0, min(1.0, dot)))


def test_angular_error_hand_examples() -> None:
    true = np.array([[0.0, 0.0], [0.0, math.pi / 2], [1.0, 0.5]])
    pred = np.array([[0.0, math.pi], [math.pi / 2, math.pi / 2], [1.0, 0.5]])
    assert mean_angular_error(true, pred) == pytest.approx((math.pi + math.pi / 2 + 0) / 3)
    assert mean_angular_error(true, true.copy()) == pytest.approx(0.0, abs=1e-7)


@FAST
@given(float_pairs(columns=2, elements=st.floats(0, 2 * math.pi, allow_nan=False)))
def test_angular_error_matches_slow_reference(case) -> None:
    true, pred, perm = case
    expected = np.mean([slow_angle(*t, *p) for t, p in zip(true, pred, strict=True)])
    assert mean_angular_error(true, pred) == pytest.approx(expected, abs=1e-7)
    assert mean_angular_error(true[perm], pred[perm]) == pytest.approx(expected, abs=1e-7)


# ---------------------------------------------------------------- haversine p50/p95


def slow_haversine(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * 6_371_000 * math.asin(math.sqrt(a))


def test_haversine_hand_example() -> None:
    metre_per_degree = 6_371_000 * math.pi / 180
    true = np.zeros((3, 2))
    pred = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    trips = np.array(["t1", "t1", "t2"], dtype=object)
    d = np.array([1.0, 2.0]) * metre_per_degree
    trip1 = (np.quantile(d, 0.5) + np.quantile(d, 0.95)) / 2  # (1.5 + 1.95) / 2 degrees
    assert trip1 == pytest.approx(1.725 * metre_per_degree)
    assert haversine_p50_p95(true, pred, trips=trips) == pytest.approx((trip1 + 0.0) / 2)
    assert haversine_p50_p95(true, true.copy(), trips=trips) == 0.0


@FAST
@given(st.data())
def test_haversine_matches_slow_reference_and_ignores_row_order(data) -> None:
    n = data.draw(st.integers(1, 30))
    lat = st.floats(-89, 89, allow_nan=False)
    lon = st.floats(-180, 180, allow_nan=False)
    points = st.lists(st.tuples(lat, lon), min_size=n, max_size=n)
    true, pred = np.array(data.draw(points)), np.array(data.draw(points))
    trips = np.array(data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n)))
    perm = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    per_trip = []
    for trip in dict.fromkeys(trips.tolist()):
        d = [slow_haversine(*true[i], *pred[i]) for i in range(n) if trips[i] == trip]
        per_trip.append((np.percentile(d, 50) + np.percentile(d, 95)) / 2)
    expected = float(np.mean(per_trip))
    assert haversine_p50_p95(true, pred, trips=trips) == pytest.approx(expected, rel=1e-9, abs=1e-6)
    permuted = haversine_p50_p95(true[perm], pred[perm], trips=trips[perm])
    assert permuted == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_options_must_align_with_rows() -> None:
    with pytest.raises(ValueError, match="trips"):
        haversine_p50_p95(np.zeros((2, 2)), np.zeros((2, 2)), trips=np.array(["a"]))
    with pytest.raises(ValueError, match="2 columns"):
        mean_angular_error(np.zeros((2, 3)), np.zeros((2, 3)))

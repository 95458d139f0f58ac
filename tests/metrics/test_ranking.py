"""Tests of podium.metrics.ranking: hand examples, references, perfect scores, row order."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metric_helpers import FAST, cells
from scipy.stats import kendalltau, pearsonr, spearmanr

from podium.errors import InvalidSubmissionError
from podium.metrics.ranking import (
    _count_inversions,
    kendall_tau_pooled,
    map_at_k,
    mean_columnwise_spearman,
    pearson,
)

# ---------------------------------------------------------------- Pearson


def test_pearson_hand_examples() -> None:
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0])) == pytest.approx(1.0)
    assert pearson(np.array([1.0, 2.0, 3.0]), np.array([3.0, 1.0, 2.0])) == pytest.approx(-0.5)
    assert pearson(np.array([0.0, 1.0]), np.array([5.0, -3.0])) == -1.0  # exactly, as scipy


def test_pearson_constant_input_is_nan_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(pearson(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))
        assert math.isnan(pearson(np.array([1.0, 2.0, 3.0]), np.zeros(3)))
        assert math.isnan(pearson(np.array([1.0]), np.array([2.0])))


@st.composite
def correlation_case(draw: st.DrawFn, columns: int = 0):
    n = draw(st.integers(3, 30))
    shape = (n,) if columns == 0 else (n, columns)
    size = int(np.prod(shape))
    # few distinct values so ties (and, for Spearman, constant columns) actually occur
    values = st.one_of(st.integers(-3, 3).map(float), st.floats(-1e3, 1e3, allow_nan=False))
    true = np.array(draw(st.lists(values, min_size=size, max_size=size))).reshape(shape)
    pred = np.array(draw(st.lists(values, min_size=size, max_size=size))).reshape(shape)
    perm = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    return true, pred, perm


def same(got: float, expected: float) -> bool:
    if math.isnan(expected):
        return math.isnan(got)
    return got == pytest.approx(expected, rel=1e-9, abs=1e-9)


@FAST
@given(correlation_case())
def test_pearson_matches_scipy_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(pearsonr(true, pred)[0])
    assert same(pearson(true, pred), expected)
    assert same(pearson(true[perm], pred[perm]), expected)
    if not np.all(true == true[0]):
        assert pearson(true, true.copy()) == pytest.approx(1.0)


# ---------------------------------------------------------------- Spearman


def test_spearman_hand_example_with_ties() -> None:
    true = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    pred = np.array([[10.0, 4.0], [20.0, 3.0], [20.0, 2.0], [30.0, 1.0]])
    # column 0 ranks [1, 2.5, 2.5, 4]: rho = 4.5 / sqrt(5 * 4.5); column 1 reversed: -1
    expected = (4.5 / math.sqrt(5 * 4.5) - 1.0) / 2
    assert mean_columnwise_spearman(true, pred) == pytest.approx(expected)


def test_spearman_constant_column_is_nan() -> None:
    true = np.array([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(mean_columnwise_spearman(true, true[:, ::-1].copy()))


@FAST
@given(correlation_case(columns=3))
def test_spearman_matches_scipy_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(np.mean([spearmanr(true[:, j], pred[:, j]).statistic for j in range(true.shape[1])]))
    assert same(mean_columnwise_spearman(true, pred), expected)
    assert same(mean_columnwise_spearman(true[perm], pred[perm]), expected)
    if not np.any(np.all(true == true[0], axis=0)):
        assert mean_columnwise_spearman(true, true.copy()) == pytest.approx(1.0)


def test_spearman_nan_input_propagates() -> None:
    true = np.array([[1.0], [2.0], [3.0]])
    assert math.isnan(mean_columnwise_spearman(true, np.array([[1.0], [np.nan], [2.0]])))


# ---------------------------------------------------------------- pooled Kendall tau


def slow_pooled_tau(true: list[str], pred: list[str]) -> float:
    inversions = pairs = 0
    for truth, guess in zip(true, pred, strict=True):
        order = truth.split()
        ranks = [order.index(cell) for cell in guess.split()]
        n = len(ranks)
        inversions += sum(ranks[i] > ranks[j] for i in range(n) for j in range(i + 1, n))
        pairs += n * (n - 1)
    return 1 - 4 * inversions / pairs if pairs else math.nan


def test_kendall_hand_examples() -> None:
    assert kendall_tau_pooled(cells("a b c"), cells("c b a")) == -1.0
    assert kendall_tau_pooled(cells("a b c"), cells("a b c")) == 1.0
    # pooled: notebook 1 has 1 inversion of 6 ordered pairs (n(n-1) = 6), notebook 2 has 1 of 2
    assert kendall_tau_pooled(cells("a b c", "x y"), cells("b a c", "y x")) == pytest.approx(1 - 4 * 2 / (6 + 2))
    assert math.isnan(kendall_tau_pooled(cells("a", ""), cells("a", "")))


@pytest.mark.parametrize(
    ("pred", "match"),
    [
        ("a b", "exactly its cells"),
        ("a b c d", "exactly its cells"),
        ("a b z", "belong to their notebook"),
        ("a a b", "only once"),
    ],
)
def test_kendall_rejects_orders_that_are_not_permutations(pred: str, match: str) -> None:
    with pytest.raises(InvalidSubmissionError, match=match) as info:
        kendall_tau_pooled(cells("x y", "a b c"), cells("y x", pred))
    assert "row 1" in str(info.value)


def test_kendall_repeated_answer_ids_are_not_the_submissions_fault() -> None:
    with pytest.raises(ValueError) as info:
        kendall_tau_pooled(cells("a a"), cells("a a"))
    assert not isinstance(info.value, InvalidSubmissionError)


@st.composite
def notebooks(draw: st.DrawFn):
    sizes = draw(st.lists(st.integers(0, 12), min_size=1, max_size=12))
    true, pred = [], []
    for row, size in enumerate(sizes):
        ids = [f"{row}c{i}" for i in range(size)]
        true.append(" ".join(ids))
        pred.append(" ".join(draw(st.permutations(ids))))
    perm = np.array(draw(st.permutations(range(len(sizes)))), dtype=np.int64)
    return true, pred, perm


@FAST
@given(notebooks())
def test_kendall_matches_slow_reference_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    expected = slow_pooled_tau(true, pred)
    got = kendall_tau_pooled(cells(*true), cells(*pred))
    assert same(got, expected)
    assert same(kendall_tau_pooled(cells(*true)[perm], cells(*pred)[perm]), expected)
    if not math.isnan(expected):
        assert kendall_tau_pooled(cells(*true), cells(*true)) == 1.0


@FAST
@given(st.permutations(range(40)))
def test_kendall_single_notebook_matches_scipy(order: list[int]) -> None:
    truth = " ".join(f"c{i}" for i in range(40))
    guess = " ".join(f"c{i}" for i in order)
    expected = kendalltau(range(40), order).statistic
    assert kendall_tau_pooled(cells(truth), cells(guess)) == pytest.approx(expected)


@FAST
@given(st.lists(st.integers(0, 10**6), unique=True, max_size=300))
def test_count_inversions_matches_quadratic_count(values: list[int]) -> None:
    ranks = np.argsort(np.argsort(np.array(values, dtype=np.int64)))
    n = len(values)
    expected = sum(values[i] > values[j] for i in range(n) for j in range(i + 1, n))
    assert _count_inversions(ranks.astype(np.int64)) == expected


# ---------------------------------------------------------------- MAP@k


def slow_map_at_k(true: list[str], pred: list[str], k: int, separator: str | None = None) -> float:
    scores = []
    for truth, guess in zip(true, pred, strict=True):
        relevant = set(truth.split(separator))
        if not relevant:
            scores.append(0.0)
            continue
        seen: set[str] = set()
        hits = total = 0.0
        for rank, item in enumerate(guess.split(separator)[:k], start=1):
            if item in relevant and item not in seen:
                hits += 1
                total += hits / rank
            seen.add(item)
        scores.append(total / min(len(relevant), k))
    return sum(scores) / len(scores)


def test_map_at_k_hand_examples() -> None:
    # whale / hotel style: one true id, AP = 1 / rank of the first correct guess
    assert map_at_k(cells("w1", "w2", "w3"), cells("w1 x", "x y w2", "x w3 w3"), k=5) == (
        pytest.approx((1 + 1 / 3 + 1 / 2) / 3)
    )
    # a repeated hit counts once; precision at hits 1 and 3 over min(|truth|, k) = 2
    assert map_at_k(cells("1 2"), cells("2 2 1"), k=12) == pytest.approx((1 + 2 / 3) / 2)
    # truncation to k; duplicates in the truth collapse into a set
    assert map_at_k(cells("a b b"), cells("x y a b"), k=3) == pytest.approx((1 / 3) / 2)
    assert map_at_k(cells("a b c"), cells("a b"), k=2) == 1.0  # min(|truth|, k) = 2
    # empty truth scores 0; comparison is string-exact (leading zeros matter)
    assert map_at_k(cells("", "0108775015"), cells("a", "108775015"), k=12) == 0.0


def test_map_at_k_rejects_nonpositive_k() -> None:
    with pytest.raises(ValueError):
        map_at_k(cells("a"), cells("a"), k=0)


@FAST
@given(st.data())
def test_map_at_k_matches_slow_reference_and_ignores_row_order(data) -> None:
    n = data.draw(st.integers(1, 20))
    item = st.sampled_from(["a", "b", "c", "d", "e", "0a", "f"])
    row = st.lists(item, max_size=8).map(" ".join)
    true = data.draw(st.lists(row, min_size=n, max_size=n))
    pred = data.draw(st.lists(row, min_size=n, max_size=n))
    k = data.draw(st.integers(1, 6))
    perm = np.array(data.draw(st.permutations(range(n))), dtype=np.int64)
    expected = slow_map_at_k(true, pred, k)
    assert map_at_k(cells(*true), cells(*pred), k=k) == pytest.approx(expected, abs=1e-12)
    permuted = map_at_k(cells(*true)[perm], cells(*pred)[perm], k=k)
    assert permuted == pytest.approx(expected, abs=1e-12)


def test_map_at_k_perfect_prediction() -> None:
    true = cells("a b", "c", "d e f")
    assert map_at_k(true, true, k=12) == 1.0
    assert map_at_k(cells("a b c d"), cells("a b"), k=2) == 1.0


@FAST
@given(st.lists(st.lists(st.integers(0, 1000), max_size=40), min_size=1, max_size=12))
def test_grouped_inversions_match_one_pass_over_the_whole_sequence(groups: list[list[int]]) -> None:
    from podium.metrics.ranking import _count_inversions_by_group

    local = [np.argsort(np.argsort(np.array(g, dtype=np.int64), kind="stable"), kind="stable") for g in groups]
    counts = np.array([len(g) for g in groups], dtype=np.int64)
    starts = np.cumsum(counts) - counts
    flat = np.concatenate([*local, np.zeros(0, dtype=np.int64)]).astype(np.int64)
    rows = np.repeat(np.arange(len(groups), dtype=np.int64), counts)
    positions = np.arange(flat.size, dtype=np.int64) - starts[rows]
    expected = _count_inversions(flat + starts[rows])  # global ranks: groups never invert each other
    assert _count_inversions_by_group(flat, rows, positions, counts) == expected


@FAST
@given(st.data())
def test_map_at_k_single_space_split_matches_the_published_lists(data) -> None:
    """separator=" ": both sides split with str.split(" "), so runs of spaces make empty guesses."""
    n = data.draw(st.integers(1, 12))
    cell = st.text(alphabet="ab0 ", max_size=10)
    true = data.draw(st.lists(cell, min_size=n, max_size=n))
    pred = data.draw(st.lists(cell, min_size=n, max_size=n))
    k = data.draw(st.integers(1, 6))
    expected = slow_map_at_k(true, pred, k, separator=" ")
    assert map_at_k(cells(*true), cells(*pred), k=k, separator=" ") == pytest.approx(expected, abs=1e-12)

"""pass@k and the paired comparison held to plain references written here: every k-subset enumerated,
scipy's binomial test, every sign flip enumerated, and a bootstrap written as loops."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from podium.report.sections import comparison_pairs, pass_at_k_curves
from podium.report.stats import EXACT_FLIPS, paired_comparison, pass_at_k, permutation_p, sign_test_p

stats = pytest.importorskip("scipy.stats")


def _subsets_pass(outcomes: list[bool], k: int) -> float:
    """The share of the k-subsets of the attempts with at least one success."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_is_the_share_of_k_subsets_with_a_success(n: int) -> None:
    rng = random.Random(n)
    for _ in range(5):
        outcomes = [rng.random() < 0.35 for _ in range(n)]
        for k in range(1, n + 1):
            assert pass_at_k(n, sum(outcomes), k) == pytest.approx(_subsets_pass(outcomes, k), abs=1e-12)


def test_pass_at_k_refuses_impossible_counts() -> None:
    for n, c, k in ((3, 4, 1), (3, 1, 0), (3, 1, 4), (2, -1, 1)):
        with pytest.raises(ValueError, match="pass_at_k needs"):
            pass_at_k(n, c, k)


def _run(cid: str, medal: bool, **more: object) -> dict[str, object]:
    return {
        "competition_id": cid,
        "competition_version": 1,
        "submission_exists": True,
        "valid_submission": True,
        "above_median": medal,
        "gold_medal": medal,
        "silver_medal": False,
        "bronze_medal": False,
        "padded": False,
        **more,
    }


def test_the_curve_averages_competitions_and_counts_complete_seeds() -> None:
    runs = [_run("a", m) for m in (True, False, False)] + [_run("b", m) for m in (False, False, False, True)]
    curve = pass_at_k_curves(runs, ["a", "b"])
    assert curve["k"] == [1, 2, 3]  # b has 4 runs, a only 3: complete seeds
    expected = [
        (_subsets_pass([True, False, False], k) + _subsets_pass([False, False, False, True], k)) / 2 * 100
        for k in (1, 2, 3)
    ]
    assert curve["curves"]["any_medal"] == pytest.approx(expected)
    assert curve["curves"]["valid_submission"] == [100.0, 100.0, 100.0]
    assert "no run of 1 competition(s) (c)" in pass_at_k_curves(runs, ["a", "b", "c"])["error"]
    padded = pass_at_k_curves(runs, ["a", "b", "c"], pad_missing=True)
    assert padded["k"] == [1, 2, 3, 4]  # the best-covered competition; missing runs fail
    first = (_subsets_pass([True, False, False, False], 1) + _subsets_pass([False, False, False, True], 1)) / 3 * 100
    assert padded["curves"]["any_medal"][0] == pytest.approx(first)


@pytest.mark.parametrize("wins,losses", [(0, 0), (5, 0), (3, 4), (10, 2), (1, 9), (25, 14)])
def test_the_sign_test_is_scipys_binomial_test(wins: int, losses: int) -> None:
    expected = 1.0 if wins + losses == 0 else stats.binomtest(wins, wins + losses, 0.5).pvalue
    assert sign_test_p(wins, losses) == pytest.approx(expected, rel=1e-12)


def _flips_p(differences: list[float]) -> float:
    observed = abs(sum(differences) / len(differences))
    count = total = 0
    for signs in itertools.product((1, -1), repeat=len(differences)):
        mean = abs(sum(s * d for s, d in zip(signs, differences, strict=True)) / len(differences))
        count += mean >= observed - 1e-12
        total += 1
    return count / total


def test_the_permutation_test_enumerates_every_flip() -> None:
    rng = random.Random(7)
    for size in (1, 3, 6, 10):
        differences = [round(rng.gauss(0.4, 1), 3) for _ in range(size)] + [0.0, 0.0]
        p, method = permutation_p(differences)
        assert method == "exact" and p == pytest.approx(_flips_p(differences), abs=1e-12)


def test_many_differences_are_sampled_and_agree_with_the_enumeration() -> None:
    rng = np.random.default_rng(3)
    differences = list(rng.normal(0.3, 1.0, EXACT_FLIPS + 4))
    p, method = permutation_p(differences, samples=40_000)
    signs = 1 - 2 * ((np.arange(2 ** len(differences))[:, None] >> np.arange(len(differences))) & 1)
    exact = float(np.mean(np.abs(signs @ np.array(differences)) >= abs(sum(differences)) - 1e-9))
    assert method == "monte carlo" and p == pytest.approx(exact, abs=0.01)


def _bootstrap_loops(a: dict[str, list[float]], b: dict[str, list[float]], resamples: int, seed: int) -> list[float]:
    """Resample competitions, then each label's runs within each pick, one replicate at a time."""
    rng = random.Random(seed)
    names = sorted(a)
    out = []
    for _ in range(resamples):
        total = 0.0
        for _ in names:
            cid = rng.choice(names)
            runs_a = [rng.choice(a[cid]) for _ in a[cid]]
            runs_b = [rng.choice(b[cid]) for _ in b[cid]]
            total += sum(runs_a) / len(runs_a) - sum(runs_b) / len(runs_b)
        out.append(total / len(names))
    return sorted(out)


@pytest.mark.parametrize("kind", ["flags", "percentiles"])
def test_the_bootstrap_interval_matches_a_loop_written_bootstrap(kind: str) -> None:
    rng = random.Random(11)
    if kind == "flags":  # 0 or 100: podium draws a binomial count, the loops draw every run
        a = {f"c{i}": [100.0 * (rng.random() < 0.3 + 0.04 * i) for _ in range(3)] for i in range(12)}
        b = {f"c{i}": [100.0 * (rng.random() < 0.2) for _ in range(4)] for i in range(12)}
    else:
        a = {f"c{i}": [100 * rng.betavariate(2 + i / 3, 2) for _ in range(3)] for i in range(12)}
        b = {f"c{i}": [100 * rng.betavariate(2, 2) for _ in range(5)] for i in range(12)}
    result = paired_comparison(a, b, resamples=20_000, seed=1)
    reference = _bootstrap_loops(a, b, 20_000, 2)
    low, high = reference[int(0.025 * len(reference))], reference[int(0.975 * len(reference))]
    assert result["bootstrap"]["lower"] == pytest.approx(low, abs=1.5)
    assert result["bootstrap"]["upper"] == pytest.approx(high, abs=1.5)
    means = [sum(a[c]) / len(a[c]) - sum(b[c]) / len(b[c]) for c in sorted(a)]
    assert result["mean_difference"] == pytest.approx(sum(means) / len(means))
    assert result["bootstrap"]["lower"] < result["mean_difference"] < result["bootstrap"]["upper"]


def test_the_comparison_uses_only_shared_competitions_and_counts_wins() -> None:
    a = {"x": [100.0, 0.0], "y": [100.0], "z": [0.0], "only_a": [100.0]}
    b = {"x": [0.0, 0.0], "y": [100.0], "z": [100.0], "only_b": [0.0]}
    result = paired_comparison(a, b, resamples=500)
    assert result["competitions"] == 3 and [r["competition_id"] for r in result["per_competition"]] == ["x", "y", "z"]
    assert result["sign_test"] == {"wins": 1, "losses": 1, "ties": 1, "p": 1.0}
    assert result["mean_difference"] == pytest.approx((50 - 0 + 0 - 100) / 3)
    same = paired_comparison({"x": [5.0, 5.0]}, {"x": [5.0]}, resamples=200)
    assert same["bootstrap"]["lower"] == same["bootstrap"]["upper"] == 0.0 and same["permutation"]["p"] == 1.0
    assert paired_comparison({"x": [1.0]}, {"y": [1.0]}) == {"competitions": 0}
    again = paired_comparison(a, b, resamples=500)
    assert again == result, "a fixed seed gives the same interval"


def test_pairs_default_to_each_label_against_the_first_and_refuse_unknown_labels() -> None:
    assert comparison_pairs(["a", "b", "c"], []) == [("a", "b"), ("a", "c")]
    assert comparison_pairs(["a", "b", "c"], ["c,b"]) == [("c", "b")]
    for bad in ("a", "a,a", "a,zz", "a,b,c"):
        with pytest.raises(Exception, match="give two different labels"):
            comparison_pairs(["a", "b", "c"], [bad])


def test_pass_at_k_of_one_success_in_n_grows_as_k_over_n() -> None:
    for n in range(1, 12):
        assert [pass_at_k(n, 1, k) for k in range(1, n + 1)] == pytest.approx([k / n for k in range(1, n + 1)])
        assert math.isclose(pass_at_k(n, 0, n), 0.0)

"""The statistics a comparison of agents needs beyond the published table: pass@k, and a paired
comparison of two labels with its uncertainty.

**pass@k** (Chen et al. 2021, the unbiased estimator): for a competition with ``n`` runs of which
``c`` succeed, ``1 - C(n - c, k) / C(n, k)`` is the chance that at least one of ``k`` runs drawn
without replacement succeeds; the split's pass@k is its mean over the split's competitions (in %).

**Paired comparison** of labels A and B on the competitions both ran: per competition, the mean over
its runs of a per-run value (any medal as 0/100, or the leaderboard percentile in %) for A minus
that for B; the mean of those differences; a bootstrap interval that resamples competitions, then
each label's runs within every resampled competition (so both the choice of competitions and the
luck of the seeds count); an exact two-sided sign test over the competitions that differ; and a
paired permutation test (each competition's difference flips sign at random: exact over every
flip for up to :data:`EXACT_FLIPS` differing competitions, else Monte Carlo).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["EXACT_FLIPS", "paired_comparison", "pass_at_k", "pearson", "permutation_p", "sign_test_p"]

#: Up to this many non-zero differences, the permutation test enumerates every sign flip.
EXACT_FLIPS = 16


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with ``n`` attempts of which ``c`` succeeded (a probability)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact binomial sign test of ``wins`` against ``losses`` (ties left out); 1.0 with none."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def permutation_p(differences: Sequence[float], *, samples: int = 20_000, seed: int = 0) -> tuple[float, str]:
    """Two-sided paired permutation test of mean(differences) = 0: (p, ``exact`` or ``monte carlo``).

    Zero differences do not change under a flip and are left out of the enumeration, not of the mean.
    """
    values = np.asarray(differences, dtype=np.float64)
    if values.size == 0:
        return 1.0, "exact"
    observed = abs(values.mean())
    moving = values[values != 0]
    rest = values.sum() - moving.sum()  # 0.0: the zeros
    tolerance = 1e-12 * max(1.0, float(np.abs(values).max()))
    if moving.size <= EXACT_FLIPS:
        signs = 1 - 2 * ((np.arange(2**moving.size)[:, None] >> np.arange(moving.size)) & 1)
        means = np.abs((signs @ moving + rest) / values.size)
        return float(np.mean(means >= observed - tolerance)), "exact"
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(samples, moving.size))
    means = np.abs((signs @ moving + rest) / values.size)
    return float((np.sum(means >= observed - tolerance) + 1) / (samples + 1)), "monte carlo"


def _resampled_means(values: np.ndarray, times: int, rng: np.random.Generator) -> np.ndarray:
    """``times`` means of bootstrap resamples of ``values`` (each as many draws as there are values)."""
    size = values.size
    distinct = np.unique(values)
    if distinct.size == 1:
        return np.full(times, distinct[0])
    if distinct.size == 2:  # two values (a flag in %): the count of the higher one is binomial
        low, high = distinct
        share = float(np.mean(values == high))
        result: np.ndarray = low + (high - low) * rng.binomial(size, share, times) / size
        return result
    return np.asarray(values[rng.integers(0, size, size=(times, size))].mean(axis=1))


def _bootstrap(a: Sequence[np.ndarray], b: Sequence[np.ndarray], *, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` bootstrap replicates of mean over competitions of (mean A - mean B)."""
    rng = np.random.default_rng(seed)
    n = len(a)
    picks = rng.integers(0, n, size=resamples * n)
    order = np.argsort(picks, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(picks, minlength=n))))
    differences = np.empty(resamples * n)
    for index in range(n):
        where = order[bounds[index] : bounds[index + 1]]
        times = where.size
        if times:
            differences[where] = _resampled_means(a[index], times, rng) - _resampled_means(b[index], times, rng)
    result: np.ndarray = differences.reshape(resamples, n).mean(axis=1)
    return result


def paired_comparison(
    a: Mapping[str, Sequence[float]],
    b: Mapping[str, Sequence[float]],
    *,
    resamples: int = 2_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """A minus B over the competitions both have values for (``competition -> per-run values``).

    Returns the competitions compared, each one's means and difference, the mean difference, the
    bootstrap interval, the sign test and the permutation test (see the module docstring); with no
    shared competition, ``{"competitions": 0}`` and nothing else.
    """
    shared = sorted(cid for cid in a.keys() & b.keys() if len(a[cid]) and len(b[cid]))
    if not shared:
        return {"competitions": 0}
    values_a = [np.asarray(a[cid], dtype=np.float64) for cid in shared]
    values_b = [np.asarray(b[cid], dtype=np.float64) for cid in shared]
    means_a = np.array([v.mean() for v in values_a])
    means_b = np.array([v.mean() for v in values_b])
    differences = means_a - means_b
    replicates = _bootstrap(values_a, values_b, resamples=resamples, seed=seed)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    wins, losses = int(np.sum(differences > 0)), int(np.sum(differences < 0))
    p_value, method = permutation_p(differences.tolist(), seed=seed)
    return {
        "competitions": len(shared),
        "per_competition": [
            {
                "competition_id": cid,
                "a": float(x),
                "b": float(y),
                "difference": float(x - y),
                "runs_a": len(va),
                "runs_b": len(vb),
            }
            for cid, x, y, va, vb in zip(shared, means_a, means_b, values_a, values_b, strict=True)
        ],
        "mean_a": float(means_a.mean()),
        "mean_b": float(means_b.mean()),
        "mean_difference": float(differences.mean()),
        "bootstrap": {
            "confidence": confidence,
            "lower": float(low),
            "upper": float(high),
            "resamples": resamples,
            "seed": seed,
        },
        "sign_test": {
            "wins": wins,
            "losses": losses,
            "ties": len(shared) - wins - losses,
            "p": sign_test_p(wins, losses),
        },
        "permutation": {"p": p_value, "method": method},
    }


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair of ``x`` and ``y`` (NaN where a row is constant)."""
    dx = x - x.mean(axis=1, keepdims=True)
    dy = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = (dx * dy).sum(axis=1) / np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
    return result


def pearson(
    x: Sequence[float], y: Sequence[float], *, resamples: int = 2_000, seed: int = 0, confidence: float = 0.95
) -> dict[str, Any]:
    """Pearson's r of paired values and a percentile bootstrap interval that resamples the pairs.

    Resamples in which either side is constant have no r and are left out (``degenerate`` counts
    them). With fewer than three pairs, or a constant side, r is None.
    """
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = xs.size
    out: dict[str, Any] = {"n": int(n), "r": None, "bootstrap": None}
    if n < 3:
        return out
    r = float(_pearson_rows(xs[None, :], ys[None, :])[0])
    if not np.isfinite(r):
        return out
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    replicates = _pearson_rows(xs[picks], ys[picks])
    finite = replicates[np.isfinite(replicates)]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    out["r"] = r
    out["bootstrap"] = {
        "confidence": confidence,
        "lower": float(low),
        "upper": float(high),
        "resamples": resamples,
        "degenerate": int(resamples - finite.size),
        "seed": seed,
    }
    return out

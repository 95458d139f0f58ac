"""The numbers of `podium report`: the published MLE-bench aggregation, and podium's own view beside it.

The published rules (``experiments/aggregate_grading_reports.py`` of openai/mle-bench), reproduced:

- reports are read file by file in sorted path order; within a file, in competition-id order
  (a stable sort); seed *i* of a competition is its *i*-th report;
- only complete seeds count: the number of seeds is the smallest report count over the split's
  competitions, and a competition of the split with no report at all is an error;
  ``--pad-missing`` instead takes the largest count and fills missing reports with failures;
- ``--seeds N`` keeps the first N seeds (-1: all); asking for more than there are is an error;
- reports of competitions outside the split are ignored;
- each seed gives the percentage of the split's competitions with a submission, a valid one, a
  score above the median, gold, silver, bronze, and any medal (gold or silver or bronze);
- the result is the mean over seeds, the standard error of the mean (ddof 1; 0.0 with one seed),
  and the 95% interval mean +- 1.96 SEM.

Seed order in a podium run group: a competition's runs are its reports in ascending ``seed``
number, so the *i*-th report is the run with the *i*-th smallest seed number. A gap closes up: with
seeds 0 and 2 only, seed 2 is that competition's second report and is aligned with the other
competitions' seed 1 (exactly what the published script does with a grading report written from
those runs in seed order); the report lists such gaps in its notes.

podium's own view, beside the published numbers and never mixed into them: runs that failed because
of the harness (a record whose ``status`` is not ``"finished"``, or that has no ``agent_result``)
are counted apart from the agent's failures (a finished run without a valid submission) and left
out of each seed's denominator; the interval is Student's t with n-1 degrees of freedom (none
with one seed), clipped to 0-100 (a rate cannot leave it; the published interval is left as printed). In the published numbers such a run counts as the failure it looks like.

Where runs were also graded by a later version that changes only the metric (``other_versions``
in the grade), a second block gives the published rules' numbers on those corrected grades.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from podium.errors import UsageError
from podium.records import RUN_FLAGS

__all__ = [
    "FLAGS",
    "METRICS",
    "RATE_KEYS",
    "RULES",
    "AggregationError",
    "build_seeds",
    "names_text",
    "podium_view",
    "published",
    "published_numbers",
    "runs_by_competition",
    "t_quantile",
]

#: The run flags that the published aggregation reads.
FLAGS = RUN_FLAGS

#: The published script's metric keys, in its order, with the words podium's tables use.
METRICS = {
    "total_competitions": "competitions",
    "submission_exists_percentage": "made submission",
    "valid_submissions_percentage": "valid",
    "above_median_percentage": "above median",
    "gold_medal_percentage": "gold",
    "silver_medal_percentage": "silver",
    "bronze_medal_percentage": "bronze",
    "any_medal_percentage": "any medal",
}
RATE_KEYS = tuple(k for k in METRICS if k != "total_competitions")
RULES = (
    "the published MLE-bench aggregation (experiments/aggregate_grading_reports.py): seed i of a competition is "
    "its i-th report; only complete seeds count unless --pad-missing; mean over seeds, SEM (ddof 1), "
    "95% interval mean +- 1.96 SEM"
)


class AggregationError(UsageError):
    """The published rules cannot aggregate these reports over this split (the message says why and the fix)."""


# --------------------------------------------------------------------------------------------------
# The published rules


def _zero_run(competition_id: str) -> dict[str, Any]:
    """A missing run, as --pad-missing counts it: every flag false."""
    return {
        "competition_id": competition_id,
        "competition_version": 1,
        **dict.fromkeys(FLAGS, False),
        "other_versions": [],
        "harness_failure": None,
        "padded": True,
    }


def names_text(ids: Sequence[str], most: int | None = None) -> str:
    if most is None or len(ids) <= most:
        return ", ".join(ids)
    return f"{', '.join(ids[:most])} and {len(ids) - most} more"


def runs_by_competition(
    runs: Iterable[Mapping[str, Any]], competition_ids: Sequence[str]
) -> defaultdict[str, list[Mapping[str, Any]]]:
    """The runs of each of ``competition_ids``, in reading order (others are left out)."""
    wanted = set(competition_ids)
    out: defaultdict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs:
        if run["competition_id"] in wanted:
            out[run["competition_id"]].append(run)
    return out


def build_seeds(
    runs: Iterable[Mapping[str, Any]],
    competition_ids: Sequence[str],
    *,
    seeds: int = -1,
    pad_missing: bool = False,
    split: str = "the split",
) -> list[list[Mapping[str, Any]]]:
    """The seeds the published rules form: one run per competition of the split in each seed.

    ``runs`` are in reading order (see the module docstring); runs of competitions outside
    ``competition_ids`` are ignored. Raises :class:`AggregationError` where the published script
    raises.
    """
    if seeds == 0 or seeds < -1:
        raise AggregationError(f"--seeds {seeds}: pass a number of seeds of at least 1, or -1 for every seed")
    if not competition_ids:
        raise AggregationError(f"split {split} has no competitions")
    per_competition = runs_by_competition(runs, competition_ids)
    missing = [cid for cid in competition_ids if not per_competition[cid]]
    if missing and not pad_missing:
        raise AggregationError(
            f"split {split}: no report for {len(missing)} of its {len(competition_ids)} competitions "
            f"({names_text(missing)}); pass --pad-missing to count missing runs as failures"
        )
    counts = [len(per_competition[cid]) for cid in competition_ids]
    available = max(counts) if pad_missing else min(counts)
    if available == 0:
        raise AggregationError(
            f"split {split}: no report for any of its {len(competition_ids)} competitions; choose a split "
            "that the runs cover, or leave this input out"
        )
    if seeds > available:
        kind = "seed(s), counting missing runs as failures" if pad_missing else "complete seed(s)"
        raise AggregationError(
            f"--seeds {seeds}: split {split} has only {available} {kind}; pass --seeds {available} or -1"
        )
    count = available if seeds == -1 else seeds
    out = []
    for index in range(count):
        out.append(
            [
                per_competition[cid][index] if index < len(per_competition[cid]) else _zero_run(cid)
                for cid in competition_ids
            ]
        )
    return out


def _seed_percentages(seed: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """One seed's percentages of its competitions, computed in the published script's order of operations."""
    total = len(seed)

    def share(flag: Any) -> float:
        return sum(1 for run in seed if flag(run)) / total * 100

    return {
        "total_competitions": float(total),
        "submission_exists_percentage": share(lambda r: r["submission_exists"]),
        "valid_submissions_percentage": share(lambda r: r["valid_submission"]),
        "above_median_percentage": share(lambda r: r["above_median"]),
        "gold_medal_percentage": share(lambda r: r["gold_medal"]),
        "silver_medal_percentage": share(lambda r: r["silver_medal"]),
        "bronze_medal_percentage": share(lambda r: r["bronze_medal"]),
        "any_medal_percentage": share(lambda r: r["gold_medal"] or r["silver_medal"] or r["bronze_medal"]),
    }


def _mean_sem(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (ddof 1), as numpy and scipy.stats.sem compute them; SEM 0.0 for one value."""
    array = np.asarray(values, dtype=np.float64)
    mean = float(np.mean(array))
    sem = float(np.std(array, ddof=1) / len(values) ** 0.5) if len(values) > 1 else 0.0
    return mean, sem


def published(
    runs: Iterable[Mapping[str, Any]],
    competition_ids: Sequence[str],
    *,
    seeds: int = -1,
    pad_missing: bool = False,
    split: str = "the split",
) -> dict[str, Any]:
    """The published script's JSON output for these runs over this split."""
    built = build_seeds(runs, competition_ids, seeds=seeds, pad_missing=pad_missing, split=split)
    return published_numbers(built, len(competition_ids))


def published_numbers(built: Sequence[Sequence[Mapping[str, Any]]], competitions: int) -> dict[str, Any]:
    per_seed = [_seed_percentages(seed) for seed in built]
    metrics = {}
    for key in METRICS:
        mean, sem = _mean_sem([p[key] for p in per_seed])
        metrics[key] = {
            "mean": mean,
            "ci_lower": mean - 1.96 * sem,
            "ci_upper": mean + 1.96 * sem,
            "standard_error": sem,
        }
    return {"num_seeds_averaged": len(per_seed), "num_competitions_per_seed": competitions, "metrics": metrics}


# --------------------------------------------------------------------------------------------------
# podium's own view


def _t_coverage(t: float, df: int) -> float:
    """P(-t < T < t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4, finite sums)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    total, term = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * c2
            total += term
        inner = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + inner)
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return math.sin(theta) * total


def t_quantile(probability: float, df: int) -> float:
    """The ``probability`` quantile (above 0.5) of Student's t with ``df`` >= 1 degrees of freedom."""
    if df < 1 or not 0.5 < probability < 1:
        raise ValueError(f"t_quantile needs df >= 1 and 0.5 < probability < 1, got {df}, {probability}")
    coverage = 2 * probability - 1
    low, high = 0.0, 1.0
    while _t_coverage(high, df) < coverage:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if _t_coverage(middle, df) < coverage:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def podium_view(built: Sequence[Sequence[Mapping[str, Any]]], unused_runs: int = 0) -> dict[str, Any] | None:
    """Rates over the same seeds without the harness's failures, with a t interval; the counts with ``metrics`` None
    when every run was the harness's failure; None when there is no run at all."""
    per_seed = []
    runs = harness = agent = padded = 0
    for seed in built:
        counted = [r for r in seed if not r.get("harness_failure")]
        real = [r for r in seed if not r.get("padded")]
        runs += len(real)
        padded += len(seed) - len(real)
        harness += len(seed) - len(counted)
        agent += sum(1 for r in real if not r.get("harness_failure") and not r["valid_submission"])
        if counted:
            per_seed.append(_seed_percentages(counted))
    counts = {"runs": runs, "harness_failures": harness, "agent_failures": agent, "padded": padded}
    if not per_seed:  # nothing left to rate; the counts still say why
        return {"num_seeds": 0, **counts, "unused_runs": unused_runs, "metrics": None} if runs else None
    n = len(per_seed)
    factor = t_quantile(0.975, n - 1) if n > 1 else None
    metrics = {}
    for key in RATE_KEYS:
        mean, sem = _mean_sem([p[key] for p in per_seed])
        metrics[key] = {
            "mean": mean,
            "standard_error": sem if n > 1 else None,
            "t_lower": max(0.0, mean - factor * sem) if factor is not None else None,
            "t_upper": min(100.0, mean + factor * sem) if factor is not None else None,
        }
    return {"num_seeds": n, **counts, "unused_runs": unused_runs, "metrics": metrics}

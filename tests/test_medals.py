"""Medals as the published benchmark places them, on every competition.

The expected flags are computed here from the published rule, independently of podium's
leaderboard code: scores are rounded to 5 decimals; thresholds are the scores at Kaggle's
team-count positions of the private leaderboard in its file order; gold is a score at least as good
as the gold threshold, silver one that is not gold and at least as good as the silver threshold,
bronze neither of those and at least as good as the bronze threshold (the flags are exclusive);
above median is strictly better than the median of all scores. Kaggle's ``awards_medals`` plays no
part. Where the leaderboard CSVs of ``../shared/competitions/leaderboards`` are present (set
``PODIUM_LEADERBOARDS`` to another folder), the thresholds are taken from them; otherwise from the
committed figures.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import pytest

from podium import registry
from podium.competition import Competition
from podium.grading import grade_score

ROOT = Path(__file__).resolve().parents[1]
LEADERBOARDS = Path(os.environ.get("PODIUM_LEADERBOARDS") or ROOT.parent / "shared" / "competitions" / "leaderboards")
RANKED = [c for c in registry.ids() if registry.get(c).leaderboard is not None]


def _published_positions(n: int) -> tuple[int, int, int]:
    if n < 100:
        return max(1, int(n * 0.1)), max(1, int(n * 0.2)), max(1, int(n * 0.4))
    if n < 250:
        return 10, max(1, int(n * 0.2)), max(1, int(n * 0.4))
    if n < 1000:
        return 10 + int(n * 0.002), 50, 100
    return 10 + int(n * 0.002), max(1, int(n * 0.05)), max(1, int(n * 0.1))


def _published_thresholds(comp: Competition) -> tuple[bool, float, float, float, float]:
    """(lower is better, gold, silver, bronze, median) by the published rule, from the CSV when present."""
    path = LEADERBOARDS / f"{comp.id}.csv"
    if not path.is_file():
        board = comp.leaderboard
        assert board is not None
        return not board.higher_is_better, board.gold, board.silver, board.bronze, board.median
    with path.open(encoding="utf-8", newline="") as handle:
        scores = [float(row["score"]) for row in csv.DictReader(handle)]
    lower = scores[0] < scores[-1]
    ordered = sorted(scores)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    gold, silver, bronze = (scores[p - 1] for p in _published_positions(len(scores)))
    return lower, gold, silver, bronze, median


def _published_flags(score: float, thresholds: tuple[bool, float, float, float, float]) -> tuple[bool, ...]:
    lower, gold_at, silver_at, bronze_at, median = thresholds
    score = round(score, 5)

    def reaches(threshold: float) -> bool:
        return score <= threshold if lower else score >= threshold

    gold = reaches(gold_at)
    silver = not gold and reaches(silver_at)
    bronze = not gold and not silver and reaches(bronze_at)
    above = score < median if lower else score > median
    return gold, silver, bronze, gold or silver or bronze, above


@pytest.mark.parametrize("cid", RANKED)
def test_scores_around_every_threshold_place_as_published(cid: str) -> None:
    comp = registry.get(cid)
    thresholds = _published_thresholds(comp)
    lower = thresholds[0]
    assert comp.higher_is_better is not lower, "the declared direction must be the leaderboard's"
    report = grade_score(comp, thresholds[1])
    assert (report.gold_threshold, report.silver_threshold, report.bronze_threshold) == pytest.approx(
        thresholds[1:4], rel=1e-12
    )
    assert report.median_threshold == pytest.approx(thresholds[4], rel=1e-12)
    for threshold in thresholds[1:]:
        step = max(abs(threshold) * 1e-9, 1e-12)
        for score in (
            threshold,
            threshold + 4e-6,
            threshold - 4e-6,
            threshold + 2e-5,
            threshold - 2e-5,
            threshold + step,
        ):
            if not math.isfinite(score):
                continue
            report = grade_score(comp, score)
            got = (report.gold_medal, report.silver_medal, report.bronze_medal, report.any_medal, report.above_median)
            assert got == _published_flags(score, thresholds), (score, thresholds)
            assert sum(got[:3]) <= 1, "medal flags are exclusive"


def test_kaggle_awarding_no_medals_does_not_withhold_them() -> None:
    comp = registry.get("predict-volcanic-eruptions-ingv-oe")
    assert not comp.awards_medals
    report = grade_score(comp, 0.0)  # a perfect mean absolute error
    assert (report.gold_medal, report.silver_medal, report.bronze_medal, report.any_medal) == (True, False, False, True)
    assert report.rank == 1


def test_scores_are_rounded_to_five_decimals_before_placing() -> None:
    comp = registry.get("spaceship-titanic")
    board = comp.leaderboard
    assert board is not None and board.higher_is_better
    just_below = board.gold - 4e-6  # rounds up onto the gold threshold, as in the published grader
    report = grade_score(comp, just_below)
    assert report.score == round(just_below, 5) and report.gold_medal

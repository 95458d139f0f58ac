"""Kaggle private-leaderboard figures and the medal rules: pure functions, no I/O.

Medal thresholds follow Kaggle's team-count tiers (see ``medal_positions``). As in the published
benchmark's grader, the medal flags are exclusive: a score earns the best medal whose threshold it
reaches (at least as good as the threshold), and only that one, so a gold is not also a silver. A
score is "above median" when strictly better than the median of all leaderboard scores.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["MEDALS", "Leaderboard", "Medal", "Placement", "medal_positions"]

Medal = Literal["gold", "silver", "bronze"]
#: Best first.
MEDALS: tuple[Medal, ...] = ("gold", "silver", "bronze")


def medal_positions(n_teams: int) -> tuple[int, int, int]:
    """1-based leaderboard positions of the last gold, silver and bronze medal for ``n_teams``."""
    if n_teams < 1:
        raise ValueError(f"a leaderboard needs at least one team, got n_teams={n_teams}")
    if n_teams < 100:
        return (max(1, int(0.1 * n_teams)), max(1, int(0.2 * n_teams)), max(1, int(0.4 * n_teams)))
    if n_teams < 250:
        return (10, max(1, int(0.2 * n_teams)), max(1, int(0.4 * n_teams)))
    if n_teams < 1000:
        return (10 + int(0.002 * n_teams), 50, 100)
    return (10 + int(0.002 * n_teams), max(1, int(0.05 * n_teams)), max(1, int(0.1 * n_teams)))


@dataclass(frozen=True)
class Placement:
    """Where one score lands on a leaderboard."""

    medal: Medal | None  # the best medal reached; the flags below are exclusive
    above_median: bool
    percentile: float  # share of leaderboard teams strictly beaten, in [0, 1]
    rank: int  # the 1-based place the score would have had

    @property
    def gold_medal(self) -> bool:
        return self.medal == "gold"

    @property
    def silver_medal(self) -> bool:
        return self.medal == "silver"

    @property
    def bronze_medal(self) -> bool:
        return self.medal == "bronze"

    @property
    def any_medal(self) -> bool:
        return self.medal is not None


@dataclass(frozen=True)
class Leaderboard:
    """A competition's private leaderboard, reduced to the figures grading needs.

    ``quantiles`` are the scores at 0%, 1%, ..., 100% of the leaderboard in best-first order; the
    percentile and rank of a score are read from them by linear interpolation, so they are exact at
    the quantile points and within 1% of the teams in between. ``last_submission`` stands in for the
    competition's deadline where its declaration states none (``podium.deadlines``).
    """

    n_teams: int
    higher_is_better: bool
    gold: float
    silver: float
    bronze: float
    median: float
    quantiles: tuple[float, ...]
    source: str = "kaggle"
    #: The latest submission on the board, as Kaggle's CSV writes it (``2019-11-12 23:58:14``); None where the
    #: board has no dates (a reference leaderboard, or a file derived before they were kept).
    last_submission: str | None = None

    @classmethod
    def from_scores(
        cls,
        scores: Sequence[float],
        *,
        higher_is_better: bool,
        source: str = "kaggle",
        n_quantiles: int = 101,
        last_submission: str | None = None,
    ) -> Leaderboard:
        """Figures from every team's score (any order)."""
        ranked = sorted((float(s) for s in scores if not math.isnan(float(s))), reverse=higher_is_better)
        if not ranked:
            raise ValueError("a leaderboard needs at least one numeric score")
        n = len(ranked)
        gold, silver, bronze = (ranked[p - 1] for p in medal_positions(n))
        ordered = sorted(ranked)
        mid = n // 2
        median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
        quantiles = tuple(_quantile(ranked, q / (n_quantiles - 1)) for q in range(n_quantiles))
        return cls(n, higher_is_better, gold, silver, bronze, median, quantiles, source, last_submission)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Leaderboard:
        """The figures ``to_dict`` wrote (a file from before ``last_submission`` was kept reads as None)."""
        fields = dict(data)
        fields["quantiles"] = tuple(fields["quantiles"])  # type: ignore[arg-type]
        return cls(**fields)  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["quantiles"] = list(self.quantiles)
        if self.last_submission is None:  # a board without dates writes the figures it always wrote
            del data["last_submission"]
        return data

    def better_or_equal(self, score: float, threshold: float) -> bool:
        return score >= threshold if self.higher_is_better else score <= threshold

    def place(self, score: float) -> Placement:
        """Medals, above-median, percentile and rank of ``score``."""
        beaten = self._share_beaten(score)
        thresholds = {"gold": self.gold, "silver": self.silver, "bronze": self.bronze}
        return Placement(
            medal=next((m for m in MEDALS if self.better_or_equal(score, thresholds[m])), None),
            above_median=score > self.median if self.higher_is_better else score < self.median,
            percentile=beaten,
            rank=round(self.n_teams * (1 - beaten)) + 1 if beaten < 1 else 1,
        )

    def _share_beaten(self, score: float) -> float:
        # Work in "worse is larger" units so one ascending search serves both directions.
        sign = -1.0 if self.higher_is_better else 1.0
        worst_first = [sign * q for q in self.quantiles]  # ascending: best first
        x = sign * score
        if x < worst_first[0]:
            return 1.0
        if x >= worst_first[-1]:
            return 0.0
        i = bisect.bisect_right(worst_first, x)
        lo, hi = worst_first[i - 1], worst_first[i]
        step = 1 / (len(worst_first) - 1)
        position = (i - 1) * step + (step * (x - lo) / (hi - lo) if hi > lo else step)
        return max(0.0, min(1.0, 1 - position))


def _quantile(ranked: Sequence[float], q: float) -> float:
    """Linear-interpolated score at fraction ``q`` of a best-first list."""
    pos = q * (len(ranked) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ranked) - 1)
    return ranked[lo] + (ranked[hi] - ranked[lo]) * (pos - lo)

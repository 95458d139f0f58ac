"""An episode's reward from its grade: ``score`` (signed so that higher is better), ``percentile`` and ``medal``
(the competition's private leaderboard: sealed tasks only), or a callable given the grade.

Every step but the last gives 0; the last gives :func:`reward_of` its grade. An invalid or missing submission
gives ``invalid_reward``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from podium.errors import UsageError
from podium.records import GradeReport

__all__ = ["REWARDS", "RewardSpec", "check_reward", "reward_of"]

REWARDS = ("score", "percentile", "medal")
#: ``medal``: gold, silver, bronze, above the median, else 0.
MEDAL_REWARDS = (1.0, 0.75, 0.5, 0.25)

RewardSpec = str | Callable[[GradeReport], float]


def check_reward(reward: Any, task: str) -> str:
    """The reward's name for the record (``callable:<name>`` for a function); raises a one-line
    :class:`UsageError` for one that is unknown or needs the private leaderboard on a holdout task."""
    if callable(reward):
        return f"callable:{getattr(reward, '__qualname__', type(reward).__name__)}"
    if reward not in REWARDS:
        raise UsageError(
            f"reward={reward!r} is not a reward. Fix: pass one of {', '.join(map(repr, REWARDS))} or a function."
        )
    if task == "holdout" and reward != "score":
        raise UsageError(
            f"reward={reward!r} needs the competition's private leaderboard, which a holdout task never uses. "
            'Fix: pass reward="score" (the metric, signed so that higher is better), or task="sealed".'
        )
    return str(reward)


def reward_of(reward: RewardSpec, grade: GradeReport | None, invalid_reward: float) -> float:
    """The last step's reward for ``grade`` (None: no grade at all)."""
    if grade is None or not grade.valid_submission:
        return float(invalid_reward)
    if callable(reward):
        value = float(reward(grade))
    elif reward == "score":
        if grade.score is None or not math.isfinite(grade.score):
            return float(invalid_reward)
        value = -grade.score if grade.is_lower_better else grade.score
    elif reward == "percentile":
        value = grade.percentile if grade.percentile is not None else float(invalid_reward)
    else:
        flags = (grade.gold_medal, grade.silver_medal, grade.bronze_medal, grade.above_median)
        value = next((r for r, flag in zip(MEDAL_REWARDS, flags, strict=True) if flag), 0.0)
    return float(value)

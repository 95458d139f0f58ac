"""podium: a benchmark harness for AI agents doing real machine-learning engineering.

The public API::

    import podium
    comp = podium.get_competition("spaceship-titanic")
    report = podium.grade(comp, "submission.csv", data_dir="~/data")
"""

from __future__ import annotations

from podium.competition import Column, Competition, MetricSpec, ids, load_all, split_ids
from podium.competition import get as get_competition
from podium.errors import (
    BrokenAnswersError,
    DataNotFoundError,
    HarnessError,
    InvalidSubmissionError,
    PodiumError,
    RegistryError,
    UnknownCompetitionError,
)
from podium.grading import GradeReport, default_data_dir, grade
from podium.leaderboard import Leaderboard, Placement, medal_positions
from podium.metrics import METRICS, Metric, get_metric

__version__ = "0.1.0"

__all__ = [
    "METRICS",
    "BrokenAnswersError",
    "Column",
    "Competition",
    "DataNotFoundError",
    "GradeReport",
    "HarnessError",
    "InvalidSubmissionError",
    "Leaderboard",
    "Metric",
    "MetricSpec",
    "Placement",
    "PodiumError",
    "RegistryError",
    "UnknownCompetitionError",
    "__version__",
    "default_data_dir",
    "get_competition",
    "get_metric",
    "grade",
    "ids",
    "load_all",
    "medal_positions",
    "split_ids",
]

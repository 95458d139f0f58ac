"""podium: a benchmark harness for AI agents doing real machine-learning engineering.

The public API::

    import podium
    comp = podium.get_competition("spaceship-titanic")
    report = podium.grade(comp, "submission.csv", data_dir="~/data")

The stages are packages of their own (``docs/architecture.md``): :mod:`podium.grading`,
:mod:`podium.data`, :mod:`podium.sandbox`, :mod:`podium.services`, :mod:`podium.agents`,
:mod:`podium.run`, :mod:`podium.report`; each exports its public names in ``__all__``.
"""

from __future__ import annotations

from podium.competition import Column, Competition, MetricSpec
from podium.errors import (
    BrokenAnswersError,
    DataNotFoundError,
    HarnessError,
    InvalidSubmissionError,
    PodiumError,
    PrepareError,
    RegistryError,
    UnknownCompetitionError,
    UnknownMetricError,
    UnknownVersionError,
    UsageError,
)
from podium.grading import grade, validate
from podium.leaderboard import Leaderboard, Placement, medal_positions
from podium.metrics import METRICS, Metric, get_metric
from podium.paths import default_data_dir
from podium.records import GradeReport, RunRecord, ValidationResult
from podium.registry import get as get_competition
from podium.registry import ids, load_all, split_ids

__version__ = "0.1.0"

__all__ = [
    "METRICS", "BrokenAnswersError", "Column", "Competition", "DataNotFoundError", "GradeReport", "HarnessError",
    "InvalidSubmissionError", "Leaderboard", "Metric", "MetricSpec", "Placement", "PodiumError", "PrepareError",
    "RegistryError", "RunRecord", "UnknownCompetitionError", "UnknownMetricError", "UnknownVersionError",
    "UsageError", "ValidationResult", "__version__", "default_data_dir", "get_competition", "get_metric", "grade",
    "ids", "load_all", "medal_positions", "split_ids", "validate"
]  # fmt: skip

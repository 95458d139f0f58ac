"""podium: a benchmark harness for AI agents doing real machine-learning engineering.

The public API::

    import podium
    comp = podium.get_competition("spaceship-titanic")
    report = podium.grade(comp, "submission.csv", data_dir="~/data")

The stages are packages of their own (``docs/architecture.md``): :mod:`podium.grading`,
:mod:`podium.data`, :mod:`podium.sandbox`, :mod:`podium.services`, :mod:`podium.agents`,
:mod:`podium.run`, :mod:`podium.report`; each exports its public names in ``__all__``.
"""

# ruff: noqa: F405  (the exceptions come by the star import below, for type checkers only)
from __future__ import annotations

from typing import TYPE_CHECKING

from podium.lazy import exports

if TYPE_CHECKING:
    from podium.competition import Column, Competition, MetricSpec
    from podium.errors import *  # noqa: F403  (its public exceptions, as __all__ below names them)
    from podium.grading import grade, validate
    from podium.leaderboard import Leaderboard, Placement, medal_positions
    from podium.metrics import METRICS, Metric, get_metric
    from podium.paths import default_data_dir
    from podium.records import GradeReport, RunRecord, ValidationResult
    from podium.registry import get as get_competition
    from podium.registry import ids, load_all, split_ids

#: Where each public name lives: imported on first use (:mod:`podium.lazy`), so that a command that grades nothing
#: (``podium --help``, ``podium list``) never loads numpy, pyarrow or the grader (issue 44).
_WHERE = {
    "Column": "podium.competition", "Competition": "podium.competition", "MetricSpec": "podium.competition",
    "grade": "podium.grading", "validate": "podium.grading", "Leaderboard": "podium.leaderboard",
    "Placement": "podium.leaderboard", "medal_positions": "podium.leaderboard", "METRICS": "podium.metrics",
    "Metric": "podium.metrics", "get_metric": "podium.metrics", "default_data_dir": "podium.paths",
    "GradeReport": "podium.records", "RunRecord": "podium.records", "ValidationResult": "podium.records",
    "get_competition": "podium.registry:get", "ids": "podium.registry", "load_all": "podium.registry",
    "split_ids": "podium.registry",
    **dict.fromkeys(
        ("BrokenAnswersError", "DataNotFoundError", "HarnessError", "InvalidSubmissionError", "PodiumError",
         "PrepareError", "RegistryError", "UnknownCompetitionError", "UnknownMetricError", "UnknownVersionError",
         "UsageError"), "podium.errors"),
}  # fmt: skip
__getattr__, __dir__ = exports(__name__, globals(), _WHERE)

__version__ = "0.1.0"

__all__ = [
    "METRICS", "BrokenAnswersError", "Column", "Competition", "DataNotFoundError", "GradeReport", "HarnessError",
    "InvalidSubmissionError", "Leaderboard", "Metric", "MetricSpec", "Placement", "PodiumError", "PrepareError",
    "RegistryError", "RunRecord", "UnknownCompetitionError", "UnknownMetricError", "UnknownVersionError",
    "UsageError", "ValidationResult", "__version__", "default_data_dir", "get_competition", "get_metric", "grade",
    "ids", "load_all", "medal_positions", "split_ids", "validate"
]  # fmt: skip

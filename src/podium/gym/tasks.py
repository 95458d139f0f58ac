"""The two task variants: ``sealed`` (the benchmark's own prepared data, graded against its private answers) and
``holdout`` (the public train re-split by podium, graded against the part it hides; :mod:`podium.gym.holdout`).

A task gives each episode its data folder (laid out as a data dir: ``<id>/prepared/public`` for the sandbox and
``<id>/prepared/private`` for the grader, which never enters the sandbox), the description and a note on the
variant for the first observation.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from podium.errors import UsageError
from podium.gym.holdout import build_holdout, no_placement, require
from podium.gym.options import EnvOptions, is_free
from podium.paths import CompetitionPaths
from podium.records import GradeReport

__all__ = ["HoldoutTask", "SealedTask", "Task", "task_of"]

_MAX_DESCRIPTION = 200_000


class Task:
    """What a task variant gives an episode."""

    name = ""
    #: What the task changes in an episode's grade before it lands (None: nothing).
    adjust_grade: Callable[[GradeReport], None] | None = None

    def __init__(self, options: EnvOptions) -> None:
        self.options = options
        self.competition = options.competition
        self.free = is_free(options.competition)

    def data_for(self, split_seed: int) -> Path:
        raise NotImplementedError

    def note(self, split_seed: int) -> str:
        raise NotImplementedError

    def description(self, data_dir: Path) -> str:
        path = CompetitionPaths(data_dir, self.competition.id).public / "description.md"
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read(_MAX_DESCRIPTION)
        except OSError:
            return "(this competition's data has no description.md)"


class SealedTask(Task):
    """The benchmark's task as ``podium run`` gives it: the prepared public data; the private answers grade."""

    name = "sealed"

    def __init__(self, options: EnvOptions) -> None:
        super().__init__(options)
        public = CompetitionPaths(options.data_dir, self.competition.id).public
        if not public.is_dir():
            raise UsageError(
                f"{self.competition.id} is not prepared in {options.data_dir}. "
                f"Fix: podium prepare {self.competition.id} (or pass data_dir= where it is)."
            )

    def data_for(self, split_seed: int) -> Path:
        return self.options.data_dir

    def note(self, split_seed: int) -> str:
        return (
            f"Task: {self.competition.ref}, sealed: the competition's own data; your submission is graded against "
            "its private answers, outside the sandbox."
        )


class HoldoutTask(Task):
    """The public train re-split with the episode's split seed; graded against the part hidden
    (:mod:`podium.gym.holdout`); the private answers are never read."""

    name = "holdout"
    adjust_grade = staticmethod(no_placement)

    def __init__(self, options: EnvOptions) -> None:
        super().__init__(options)
        require(self.competition)
        if not CompetitionPaths(options.data_dir, self.competition.id).public.is_dir():
            raise UsageError(
                f"{self.competition.id} is not prepared in {options.data_dir}. "
                f"Fix: podium prepare {self.competition.id} (or pass data_dir= where it is)."
            )

    def data_for(self, split_seed: int) -> Path:
        return build_holdout(self.competition, self.options.data_dir, split_seed, self.options.rows)

    def note(self, split_seed: int) -> str:
        rows = f", its train cut to {self.options.rows} rows" if self.options.rows is not None else ""
        return (
            f"Task: {self.competition.ref}, holdout: the competition's public train re-split by podium (split seed "
            f"{split_seed}{rows}); /home/data/test.csv holds the hidden rows without their targets. Your submission "
            "is graded with the competition's metric against those targets, outside the sandbox; there is no "
            "leaderboard."
        )


def task_of(options: EnvOptions) -> Task:
    """The task variant ``options`` ask for."""
    if options.task == "sealed":
        return SealedTask(options)
    return HoldoutTask(options)

"""The two task variants: ``sealed`` (the benchmark's own prepared data, graded against its private answers) and
``holdout`` (the public train re-split by podium, graded against the part it hides; :mod:`podium.gym.holdout`).

A task gives each episode its data folder (laid out as a data dir: ``<id>/prepared/public`` for the sandbox and
``<id>/prepared/private`` for the grader, which never enters the sandbox), the description and a note on the
variant for the first observation.
"""

from __future__ import annotations

from pathlib import Path

from podium.errors import UsageError
from podium.gym.options import EnvOptions, is_free
from podium.paths import CompetitionPaths

__all__ = ["SealedTask", "Task", "task_of"]

_MAX_DESCRIPTION = 200_000


class Task:
    """What a task variant gives an episode."""

    name = ""

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


def task_of(options: EnvOptions) -> Task:
    """The task variant ``options`` ask for."""
    if options.task == "sealed":
        return SealedTask(options)
    raise UsageError(
        f"task='holdout' is being built (podium.gym.holdout). Fix: pass task='sealed' on {options.competition.id} for now."
    )

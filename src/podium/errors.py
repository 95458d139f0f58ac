"""Exceptions raised by podium.

The tree::

    PodiumError                       anything podium raises on purpose
    ├── UsageError                    the user's input (a flag, a split, a version, a file) is wrong; says the fix
    │   ├── UnknownCompetitionError   an id that is not in the registry (carries close matches)
    │   ├── UnknownVersionError       a version the competition does not have
    │   └── UnknownMetricError        a metric name that is not in the metric table
    ├── RegistryError                 a competition declaration that is malformed (a podium bug)
    ├── DataNotFoundError             prepared answers or a sample submission are not where expected
    ├── PrepareError                  a competition could not be prepared (missing raw files, Kaggle refused)
    ├── HarnessError                  podium or its data is broken: never the agent's fault
    │   └── BrokenAnswersError        the private answers cannot be read or fail their own schema
    └── InvalidSubmissionError        the agent's submission breaks a rule; graded as invalid

Only ``InvalidSubmissionError`` turns into ``valid_submission: false`` in a grading report.
Everything else propagates, so a bug in podium is never reported as an agent's invalid submission.
A metric function called directly raises ``ValueError`` for inputs it cannot score (as scikit-learn's
do); grading turns that into a ``HarnessError``, since the rows it hands a metric passed every check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice

__all__ = [
    "BrokenAnswersError",
    "DataNotFoundError",
    "HarnessError",
    "InvalidSubmissionError",
    "PodiumError",
    "PrepareError",
    "RegistryError",
    "UnknownCompetitionError",
    "UnknownMetricError",
    "UnknownVersionError",
    "UsageError",
    "quote",
    "shorten",
]

#: The most characters of one submitted value an error message quotes.
QUOTE_LIMIT = 80
_EXAMPLE_LIMIT = 240  # one example: a row, an id and a quoted value
_TEXT_LIMIT = 1000  # the rule and the fix


def shorten(text: str, limit: int = QUOTE_LIMIT, *, keep_end: int = 0) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with an ellipsis.

    ``keep_end`` characters of the end are kept and the cut made before them (a file name keeps
    its suffix).
    """
    if len(text) <= limit:
        return text
    keep_end = min(keep_end, limit - 1)
    return text[: limit - 1 - keep_end] + "\u2026" + text[len(text) - keep_end :]


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, cut to at most ``limit`` characters: how messages quote submitted values."""
    if isinstance(value, str) and len(value) > 4 * limit:
        value = value[: 4 * limit]  # repr of the head only: a 100 MB cell is not copied
        return shorten(repr(value)[:-1], limit)
    return shorten(repr(value), limit)


class PodiumError(Exception):
    """Base class of every error podium raises on purpose."""


class UsageError(PodiumError):
    """The user's input is wrong (a flag, a name, a file); the message names the value and the fix."""


class UnknownVersionError(UsageError):
    """A competition version that does not exist."""


class UnknownCompetitionError(UsageError, KeyError):
    """A competition id that the registry does not know."""

    def __init__(self, competition_id: str, suggestions: Sequence[str] = ()) -> None:
        self.competition_id = competition_id
        self.suggestions = list(suggestions)
        hint = f" Did you mean: {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"Unknown competition {competition_id!r}.{hint} Run `podium list` to see every id.")

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class UnknownMetricError(UsageError, KeyError):
    """A metric name that the metric table does not know."""

    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class RegistryError(PodiumError):
    """A competition declaration (competition.yaml) that is malformed."""


class DataNotFoundError(PodiumError, FileNotFoundError):
    """Prepared data (answers, sample submission) is missing."""


class PrepareError(PodiumError):
    """A competition could not be prepared; the message says why and what to do."""


class HarnessError(PodiumError):
    """Podium itself, or the data it prepared, is broken. Never the agent's fault."""


class BrokenAnswersError(HarnessError):
    """The private answers cannot be read or do not match their declared schema."""


class InvalidSubmissionError(PodiumError, ValueError):
    """A submission that breaks a rule of the competition.

    ``rule`` names the rule, ``examples`` lists a few offending values (ids, rows or cells) and
    ``fix`` says how to repair the submission. ``str()`` joins all three into one message.

    Every part is cut to a bounded length (values quoted with :func:`quote` stay short on their
    own; this is the backstop), so a message never grows with the submission.
    """

    def __init__(self, rule: str, *, examples: Iterable[object] = (), fix: str = "") -> None:
        self.rule = shorten(rule, _TEXT_LIMIT)
        self.examples = [shorten(str(e), _EXAMPLE_LIMIT) for e in islice(examples, 5)]
        self.fix = shorten(fix, _TEXT_LIMIT)
        super().__init__(self._message())

    def _message(self) -> str:
        text = self.rule
        if self.examples:
            text += f" (e.g. {', '.join(self.examples)})"
        if self.fix:
            text += f". Fix: {self.fix}"
        return text

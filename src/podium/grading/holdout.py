"""The competition's exact metric on the agent's own hold-out: its predictions against its own labels.

Agents often mis-implement a competition's metric. Inside the sandbox, ``python /home/score_holdout.py
PREDICTIONS.csv LABELS.csv`` (through the validation endpoint's ``POST /score-holdout``) gives the score
podium's grader would give: the predictions are read and checked as a submission is (columns, cell
kinds, ids, row sums), and the labels, which the agent took from its own training data, stand in for
the answers. Both files are in the sample submission's format; each answer column the grader reads is
taken from the labels' column of that name, else from the submission column it is compared with
(``targets``). A metric that reads more of the answers than that (weights, masks, a ``where`` column)
needs those columns in the labels too, and says which. Nothing private is read and the test set is
never seen: the scorer knows only the two files it is given.

A competition whose answers are read by its own loader (a ``load_answers`` hook: not a table in the
sample submission's format) is not scored; the message says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from podium.competition import Competition
from podium.errors import BrokenAnswersError, HarnessError, InvalidSubmissionError
from podium.grading.check import convert_columns, read_submission
from podium.grading.files import SubmissionFile
from podium.grading.grader import SCORE_DECIMALS, score_frames
from podium.grading.table import Frame, read_csv

__all__ = ["HoldoutScore", "labels_as_answers", "score_holdout"]


@dataclass
class HoldoutScore:
    """What the hold-out scorer answers: a score, or why there is none (the predictions or the labels)."""

    valid: bool
    score: float | None
    error: str | None
    metric: str
    higher_is_better: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _needed(competition: Competition) -> list[str]:
    """The answer columns the grader reads (what :func:`~podium.grading.check.convert_columns` converts)."""
    needed = [a for _, a in competition.targets] + list(competition.id_columns)
    needed += [c.name for c in competition.answer_columns]
    if competition.metric.where:
        needed.append(competition.metric.where["column"])
    return list(dict.fromkeys(needed))


def labels_as_answers(competition: Competition, labels: Frame) -> Frame:
    """The labels (sample submission's format) as the answers the grader reads; raises InvalidSubmissionError
    naming the columns the labels lack."""
    if competition.hook("load_answers") is not None:
        raise InvalidSubmissionError(
            f"{competition.id}'s answers are not a table in the sample submission's format (podium reads them with "
            "the competition's own loader), so the hold-out scorer cannot stand your labels in for them",
            fix="score this competition's hold-out with your own implementation of the metric in description.md",
        )
    submission_column = {a: s for s, a in competition.targets}
    sources: dict[str, str] = {}
    missing = []
    for name in _needed(competition):
        if name in labels:
            sources[name] = name
        elif submission_column.get(name) in labels:
            sources[name] = submission_column[name]
        else:
            missing.append(name)
    if missing:
        raise InvalidSubmissionError(
            f"the labels file lacks column(s) {', '.join(missing)}, which the metric reads from the answers",
            fix=f"write the labels with the sample submission's columns, plus {', '.join(missing)} taken from your "
            "training data",
        )
    return Frame(arrow={name: labels.arrow(source) for name, source in sources.items()}, n_rows=labels.n_rows)


def score_holdout(competition: Competition, predictions: SubmissionFile, labels: SubmissionFile) -> HoldoutScore:
    """The grader's score of ``predictions`` against ``labels`` (both opened safely, neither trusted)."""
    metric, higher = competition.metric.name, competition.higher_is_better
    try:
        answers = labels_as_answers(competition, read_csv(labels, what="labels"))
        convert_columns(competition, answers, answers=True)  # the labels' cells, checked as answers are
    except (InvalidSubmissionError, BrokenAnswersError) as exc:
        return HoldoutScore(False, None, f"the labels are not usable: {exc}", metric, higher)
    try:
        score, warnings = score_frames(competition, answers, read_submission(competition, predictions))
    except InvalidSubmissionError as exc:
        return HoldoutScore(False, None, f"the predictions would be an invalid submission: {exc}", metric, higher)
    except HarnessError as exc:
        if not isinstance(exc.__cause__, ValueError):
            raise
        # the metric refused the answers' cells: here those are the agent's labels, not podium's answers
        return HoldoutScore(False, None, f"the labels are not usable: {exc}", metric, higher)
    if math.isnan(score):
        undefined = "the metric is undefined for these predictions and labels (e.g. a single class)"
        return HoldoutScore(True, None, undefined, metric, higher, warnings)
    return HoldoutScore(True, round(score, SCORE_DECIMALS), None, metric, higher, warnings)

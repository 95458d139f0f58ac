"""Grading: a submission and the private answers in, a :class:`GradeReport` out.

Only :class:`InvalidSubmissionError` makes a submission invalid. Unreadable or inconsistent
answers raise :class:`BrokenAnswersError`, and any other exception propagates: a podium bug is
never reported as the agent's invalid submission.
"""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from podium import registry
from podium.competition import Competition
from podium.errors import BrokenAnswersError, DataNotFoundError, HarnessError, InvalidSubmissionError
from podium.grading.align import keys_of
from podium.grading.check import CheckedSubmission, check_submission, convert_columns, read_submission
from podium.grading.columns import as_numpy, numeric_columns, take
from podium.grading.files import NoSubmissionError, SubmissionFile, display_path, open_user_file, size_cap
from podium.grading.table import Frame, read_csv
from podium.paths import CompetitionPaths, default_data_dir
from podium.records import GradeReport

__all__ = [
    "SCORE_DECIMALS",
    "answers_path",
    "grade",
    "grade_file",
    "grade_frames",
    "grade_score",
    "load_answers",
    "score_frames",
    "submission_size_cap",
    "unscored_report",
]


#: An input naming no column: each aligned row's position in the submission file
#: (``inputs: {file_rows: submission.@row}``) or in the answers as loaded (``answers.@row``),
#: for graders whose result depends on the order of either file.
FILE_ROW = "@row"
#: Scores are rounded to this many decimals before they are placed on the leaderboard, as the
#: published grader does (a score within 5e-6 of a threshold earns the medal there too).
SCORE_DECIMALS = 5


def answers_path(competition: Competition, data_dir: Path) -> Path:
    """Where the private answers of a prepared competition live; raises if they are absent."""
    path = CompetitionPaths(data_dir, competition.id).private / competition.answers
    if not path.exists():
        raise DataNotFoundError(
            f"answers for {competition.id} not found at {path}; prepare the competition "
            f"(`podium prepare -c {competition.id}`) or pass --data-dir / set PODIUM_DATA_DIR"
        )
    return path


def load_answers(competition: Competition, data_dir: Path) -> Frame:
    """Read the private answers of a prepared competition."""
    path = answers_path(competition, data_dir)
    load = competition.hook("load_answers")
    try:
        if load is not None:
            frame: Frame = load(path)
            return frame
        used = (
            {a for _, a in competition.targets}
            | set(competition.id_columns)
            | {c.name for c in competition.answer_columns}
        )
        return read_csv(path, what="answers", numeric=numeric_columns([competition.answer_column(n) for n in used]))
    except InvalidSubmissionError as exc:
        raise BrokenAnswersError(f"answers file {path} is unreadable: {exc}") from exc


def _stack(columns: Mapping[str, np.ndarray], names: list[str]) -> np.ndarray:
    if len(names) == 1:
        return columns[names[0]]
    return np.column_stack([columns[n] for n in names])


def _input(spec: Any, answers: Mapping[str, np.ndarray], submission: Mapping[str, np.ndarray]) -> np.ndarray:
    if isinstance(spec, str):
        side, _, name = spec.partition(".")
        return (answers if side == "answers" else submission)[name]
    ((side, names),) = spec.items()
    return _stack(answers if side == "answers" else submission, list(names))


def _where(spec: Mapping[str, Any], answers: Mapping[str, np.ndarray]) -> np.ndarray:
    """Rows of the aligned answers that are scored."""
    values = answers[spec["column"]]
    if "equals" in spec:
        return np.asarray(values == spec["equals"], dtype=bool)
    return np.asarray(values != spec["not_equals"], dtype=bool)


def score_frames(competition: Competition, answers_frame: Frame, submission_frame: Frame) -> tuple[float, list[str]]:
    """Check a submission against the answers and score it; returns (score, warnings)."""
    converted = convert_columns(competition, answers_frame, answers=True)
    checked = check_submission(competition, submission_frame, keys_of(converted, competition.id_columns))
    spec = competition.metric
    published = competition.hook("published_score") if competition.matching.get("pairing") == "subset" else None
    if published is not None:  # version 1 of a grader whose whole computation is its own (hooks.py)
        columns = {k: as_numpy(v) for k, v in checked.columns.items()}
        return float(published({k: as_numpy(v) for k, v in converted.items()}, columns)), checked.warnings
    used_answers = {a for _, a in competition.targets} | _input_columns(spec.inputs, "answers")
    used_submission = {s for s, _ in competition.targets} | _input_columns(spec.inputs, "submission")
    if spec.where:
        used_answers.add(spec.where["column"])
    answers = {k: as_numpy(take(converted[k], checked.expected_order)) for k in used_answers - {FILE_ROW}}
    if FILE_ROW in used_answers:
        answers[FILE_ROW] = np.asarray(checked.expected_order, dtype=np.int64)
    submission = {k: as_numpy(checked.columns[k]) for k in used_submission - {FILE_ROW}}
    if FILE_ROW in used_submission and checked.file_rows is not None:
        submission[FILE_ROW] = checked.file_rows
    pair_rows = competition.hook("pair_rows") if competition.matching.get("pairing") == "subset" else None
    if pair_rows is not None:  # the competition's published selection and pairing of the scored rows
        answer_rows, submission_rows = pair_rows(
            {k: as_numpy(v) for k, v in converted.items()}, {k: as_numpy(v) for k, v in checked.columns.items()}
        )
        answers = {k: as_numpy(converted[k])[answer_rows] for k in used_answers}
        submission = {k: v[submission_rows] for k, v in submission.items()}
    elif spec.where:
        keep = _where(spec.where, answers)
        answers = {k: v[keep] for k, v in answers.items()}
        kept = _submission_keep(competition, keep, converted, checked)
        submission = {k: v[kept] for k, v in submission.items()}
    _refuse_scored_nan(competition, submission)
    y_true = _stack(answers, [a for _, a in competition.targets])
    y_pred = _stack(submission, [s for s, _ in competition.targets])
    inputs = {k: _input(v, answers, submission) for k, v in spec.inputs.items()}
    # Token metrics build millions of short-lived lists; the cyclic garbage collector rescanning
    # them cost 3.4 s of 3.8 s on 1.2M cells in benchmarks/ (none of them form cycles).
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = spec.metric.fn(y_true, y_pred, **inputs, **spec.options)
    except InvalidSubmissionError:  # what only the metric can see (an RLE past the image, a wrong cell list)
        raise
    except ValueError as exc:  # anything else it refuses in rows that passed every check is podium's problem
        raise HarnessError(
            f"{competition.ref}: the metric {spec.name} could not score the checked rows: {exc}"
        ) from exc
    finally:
        if collecting:
            gc.enable()
    return float(value), checked.warnings


def _submission_keep(
    competition: Competition, keep: np.ndarray, answers: Mapping[str, Any], checked: CheckedSubmission
) -> np.ndarray:
    """The submission rows ``where`` scores: those paired with a scored answer row, or where a
    published grader applied the answers' mask by pandas index label, with ``submission_rows:
    file_position`` the rows at a file position where the answers file holds a scored row, with
    ``submission_rows: id`` the rows whose id names a scored answer row (each copy of a repeated id).
    Then the kept rows pair by position, so their counts must agree (else the published grader fails)."""
    where = competition.metric.where or {}
    mode = where.get("submission_rows", "paired")
    if mode == "paired":
        return keep
    in_file_order = _where(where, {where["column"]: as_numpy(answers[where["column"]])})
    if mode == "file_position" and checked.file_rows is not None:
        return in_file_order[checked.file_rows]
    if mode != "id":
        raise ValueError(f"{competition.ref}: unknown where.submission_rows {mode!r}")
    keys = keys_of(checked.columns, competition.id_columns)
    kept = in_file_order[as_numpy(pc.index_in(keys, value_set=keys_of(dict(answers), competition.id_columns)))]
    if int(kept.sum()) != int(keep.sum()):
        raise InvalidSubmissionError(
            f"{int(kept.sum())} submission row(s) name scored {'/'.join(competition.id_columns)} values for "
            f"{int(keep.sum())} scored test row(s); the published grader pairs them by position and fails",
            fix="write each id of the sample submission once",
        )
    return kept


def _refuse_scored_nan(competition: Competition, submission: Mapping[str, np.ndarray]) -> None:
    """``missing: unscored``: an empty cell passes only where the row is not scored (the published
    grader drops those rows, then its metric refuses NaN)."""
    for name, _ in competition.targets:
        if competition.column(name).options.get("missing") != "unscored":
            continue
        values = np.asarray(submission[name], dtype=np.float64)
        if np.isnan(values).any():
            raise InvalidSubmissionError(
                f"column {name!r} has {int(np.isnan(values).sum())} empty cell(s) on scored rows",
                fix=f"write a number in every row of {name!r}",
            )


def _input_columns(inputs: Mapping[str, Any], side: str) -> set[str]:
    names: set[str] = set()
    for spec in inputs.values():
        if isinstance(spec, str):
            if spec.startswith(side + "."):
                names.add(spec.partition(".")[2])
        elif side in spec:
            names.update(spec[side])
    return names


def _report(
    competition: Competition,
    path: str | Path,
    *,
    exists: bool,
    valid: bool,
    score: float | None,
    error: str | None,
    warnings: list[str],
) -> GradeReport:
    board = competition.leaderboard
    if score is not None:
        score = round(score, SCORE_DECIMALS)
    # Medals are placed for every competition, whether or not Kaggle itself awarded any there
    # (``awards_medals`` is information only): the published grader and its results do the same.
    placement = board.place(score) if (board is not None and score is not None) else None
    return GradeReport(
        competition_id=competition.id,
        competition_version=competition.version,
        score=score,
        gold_threshold=board.gold if board else None,
        silver_threshold=board.silver if board else None,
        bronze_threshold=board.bronze if board else None,
        median_threshold=board.median if board else None,
        any_medal=bool(placement and placement.any_medal),
        gold_medal=bool(placement and placement.gold_medal),
        silver_medal=bool(placement and placement.silver_medal),
        bronze_medal=bool(placement and placement.bronze_medal),
        above_median=bool(placement and placement.above_median),
        submission_exists=exists,
        valid_submission=valid,
        is_lower_better=not competition.higher_is_better,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        submission_path=str(path),
        error=error,
        percentile=placement.percentile if placement else None,
        rank=placement.rank if placement else None,
        n_teams=board.n_teams if board else None,
        leaderboard=None if board is None else board.source,
        warnings=warnings
        + ([] if board else ["no leaderboard for this competition: medals and percentile are unavailable"]),
    )


def grade_frames(competition: Competition, answers: Frame, submission: Frame, path: str | Path) -> GradeReport:
    """Grade an already-read submission, and beside it under every other version that grades the same data."""
    return _graded_by_every_version(competition, lambda c: _grade_frames(c, answers, submission, path))


def _graded_by_every_version(competition: Competition, grade_one: Callable[[Competition], GradeReport]) -> GradeReport:
    """``grade_one`` at ``competition``'s version, with the other versions that share its data in ``other_versions``."""
    report = grade_one(competition)
    for version in competition.same_data_versions:
        report.other_versions.append(grade_one(registry.get(competition.id, version)).summary())
    return report


def _grade_frames(competition: Competition, answers: Frame, submission: Frame, path: str | Path) -> GradeReport:
    shown = display_path(path)
    try:
        score, warnings = score_frames(competition, answers, submission)
    except InvalidSubmissionError as exc:
        return _report(competition, shown, exists=True, valid=False, score=None, error=str(exc), warnings=[])
    if math.isnan(score):
        undefined = "the metric is undefined for these predictions (e.g. a constant column under a correlation)"
        return _report(competition, shown, exists=True, valid=True, score=None, error=undefined, warnings=warnings)
    return _report(competition, shown, exists=True, valid=True, score=score, error=None, warnings=warnings)


def unscored_report(competition: Competition, path: str | Path, *, exists: bool, error: str) -> GradeReport:
    """The report of a submission that was not scored: missing (``exists=False``) or invalid (every version alike)."""
    shown = display_path(path)
    return _graded_by_every_version(
        competition,
        lambda c: _report(c, shown, exists=exists, valid=False, score=None, error=error, warnings=[]),
    )


def submission_size_cap(competition: Competition, data_dir: Path) -> int:
    """The largest submission file accepted: :func:`podium.grading.files.size_cap` of the sample
    submission (of the answers where no sample submission is prepared), as validation applies it."""
    sample = CompetitionPaths(data_dir, competition.id).prepared / competition.sample_submission
    try:
        reference = os.stat(sample).st_size
    except OSError:
        reference = os.stat(answers_path(competition, data_dir)).st_size
    return size_cap(reference)


def grade_score(competition: Competition, score: float, submission_path: str | Path = "") -> GradeReport:
    """The report of a valid submission whose score is already known: rounded and placed as ``grade`` would."""
    return _report(
        competition, display_path(submission_path), exists=True, valid=True, score=score, error=None, warnings=[]
    )


def grade(competition: Competition, submission_path: str | Path, data_dir: str | Path | None = None) -> GradeReport:
    """Grade the submission at ``submission_path`` against the prepared answers in ``data_dir``.

    The path may lead anywhere, but the file itself must be a regular file (a symbolic link, FIFO,
    device or directory is refused) no larger than :func:`submission_size_cap`. This runs in the
    calling process; an agent's submission is graded with
    :func:`podium.grading.isolated.grade_isolated`, which opens it inside the run's folder and bounds
    the memory and time grading may take.
    """
    data = Path(data_dir) if data_dir else default_data_dir()
    answers = load_answers(competition, data)
    try:
        file = open_user_file(submission_path, max_bytes=submission_size_cap(competition, data))
    except InvalidSubmissionError as exc:
        exists = not isinstance(exc, NoSubmissionError)
        return unscored_report(competition, submission_path, exists=exists, error=str(exc))
    with file:
        report = grade_file(competition, file, data, answers=answers)
    if not report.valid_submission:
        problem = _sample_problem(competition, data, answers)
        if problem is not None:  # the answers fail their own sample submission: the fault is theirs, not the file's
            raise BrokenAnswersError(
                f"the prepared answers of {competition.ref} do not accept its own sample submission ({problem}); "
                f"they are damaged, whatever the submission. Fix: podium verify -c {competition.id}, then podium "
                f"prepare -c {competition.id} --force"
            )
    return report


def _sample_problem(competition: Competition, data: Path, answers: Frame) -> str | None:
    """Why the competition's public sample submission is invalid against ``answers`` (None when it is valid or
    there is none to try): a prepared sample is a valid submission, so an invalid one means damaged answers."""
    sample = CompetitionPaths(data, competition.id).prepared / competition.sample_submission
    try:
        file = open_user_file(sample, max_bytes=submission_size_cap(competition, data))
    except (InvalidSubmissionError, OSError):
        return None
    with file:
        report = grade_file(competition, file, data, answers=answers)
    return None if report.valid_submission else (report.error or "invalid")


def grade_file(
    competition: Competition, file: SubmissionFile, data_dir: str | Path | None = None, *, answers: Frame | None = None
) -> GradeReport:
    """Grade an opened submission (see :mod:`podium.grading.files`) against the prepared answers."""
    data = Path(data_dir) if data_dir else default_data_dir()
    if answers is None:
        answers = load_answers(competition, data)
    try:
        frame = read_submission(competition, file)
    except InvalidSubmissionError as exc:
        return unscored_report(competition, file.path, exists=True, error=str(exc))
    report = grade_frames(competition, answers, frame, file.path)
    prepared_as = _prepared_version(competition, data)
    if prepared_as is not None and not competition.shares_data_with(prepared_as):
        report.warnings.append(
            f"the data was prepared for version {prepared_as}, graded as {competition.ref}, which needs the data "
            f"of version {competition.data_version}; grade with {competition.id}@{prepared_as} or prepare again "
            "with --force"
        )
    return report


def _prepared_version(competition: Competition, data_dir: Path) -> int | None:
    """The version recorded by `podium prepare` (None for data prepared elsewhere)."""
    record = CompetitionPaths(data_dir, competition.id).record()
    if record is None:
        return None
    version = record.get("version")
    return int(version) if version is not None else None

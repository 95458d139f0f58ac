"""Grading: a submission and the private answers in, a :class:`GradeReport` out.

Only :class:`InvalidSubmissionError` makes a submission invalid. Unreadable or inconsistent
answers raise :class:`BrokenAnswersError`, and any other exception propagates: a podium bug is
never reported as the agent's invalid submission.
"""

from __future__ import annotations

import gc
import json
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from podium import competition as registry
from podium.competition import Competition
from podium.errors import BrokenAnswersError, DataNotFoundError, InvalidSubmissionError
from podium.submission import Values, align, as_numpy, check_columns, convert_column, keys_of, numeric_columns, take
from podium.submission_file import NoSubmissionError, SubmissionFile, display_path, open_user_file, size_cap
from podium.table import Frame, read_csv

__all__ = [
    "CheckedSubmission",
    "GradeReport",
    "answers_path",
    "check_submission",
    "default_data_dir",
    "expected_keys",
    "grade",
    "grade_file",
    "grade_frames",
    "grade_score",
    "load_answers",
    "read_submission",
    "score_frames",
    "submission_size_cap",
    "unscored_report",
]


#: An input naming no column: each aligned row's position in the submission file
#: (``inputs: {file_rows: submission.@row}``), for graders whose result depends on file order.
FILE_ROW = "@row"


def default_data_dir() -> Path:
    """Where prepared competitions live: ``$PODIUM_DATA_DIR``, else the per-user cache dir."""
    if env := os.environ.get("PODIUM_DATA_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "data"


@dataclass
class GradeReport:
    """One graded submission. Field names follow MLE-bench's grading report, plus a few more."""

    competition_id: str
    competition_version: int
    score: float | None
    gold_threshold: float | None
    silver_threshold: float | None
    bronze_threshold: float | None
    median_threshold: float | None
    any_medal: bool
    gold_medal: bool
    silver_medal: bool
    bronze_medal: bool
    above_median: bool
    submission_exists: bool
    valid_submission: bool
    is_lower_better: bool
    created_at: str
    submission_path: str
    error: str | None = None
    percentile: float | None = None
    rank: int | None = None
    n_teams: int | None = None
    leaderboard: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: The same submission graded by the competition's other versions that share its data (a version
    #: that corrects only the metric), so the published and the corrected score sit side by side.
    other_versions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """The version, score and placement only (what ``other_versions`` holds for each version)."""
        return {key: getattr(self, key) for key in SUMMARY_FIELDS}


#: The fields of a grade that ``GradeReport.summary`` keeps.
SUMMARY_FIELDS = (
    "competition_version",
    "score",
    "valid_submission",
    "error",
    "any_medal",
    "gold_medal",
    "silver_medal",
    "bronze_medal",
    "above_median",
    "percentile",
    "rank",
)
#: Scores are rounded to this many decimals before they are placed on the leaderboard, as the
#: published grader does (a score within 5e-6 of a threshold earns the medal there too).
SCORE_DECIMALS = 5


def answers_path(competition: Competition, data_dir: Path) -> Path:
    """Where the private answers of a prepared competition live; raises if they are absent."""
    path = data_dir / competition.id / "prepared" / "private" / competition.answers
    if not path.exists():
        raise DataNotFoundError(
            f"answers for {competition.id} not found at {path}; prepare the competition "
            f"(`podium prepare -c {competition.id}`) or pass --data-dir / set PODIUM_DATA_DIR"
        )
    return path


def load_answers(competition: Competition, data_dir: Path) -> Frame:
    """Read the private answers of a prepared competition."""
    path = answers_path(competition, data_dir)
    hooks = competition.hooks
    try:
        if hooks is not None and hasattr(hooks, "load_answers"):
            frame: Frame = hooks.load_answers(path)
            return frame
        used = (
            {a for _, a in competition.targets}
            | set(competition.id_columns)
            | {c.name for c in competition.answer_columns}
        )
        return read_csv(path, what="answers", numeric=numeric_columns([competition.answer_column(n) for n in used]))
    except InvalidSubmissionError as exc:
        raise BrokenAnswersError(f"answers file {path} is unreadable: {exc}") from exc


def _convert(competition: Competition, frame: Frame, *, answers: bool) -> dict[str, Values]:
    """Convert the columns the grader needs, by kind; answers that fail are a harness error."""
    if answers:
        needed = [a for _, a in competition.targets] + list(competition.id_columns)
        needed += [c.name for c in competition.answer_columns]
        if competition.metric.where:
            needed.append(competition.metric.where["column"])
        lookup = competition.answer_column
    else:
        needed = list(competition.column_names)
        lookup = competition.column
    needed = list(dict.fromkeys(needed))
    missing = [n for n in needed if n not in frame.names]
    if answers and missing:
        raise BrokenAnswersError(f"{competition.id} answers lack column(s) {missing}")
    out: dict[str, Values] = {}
    for name in needed:
        try:
            out[name] = convert_column(lookup(name), frame.arrow(name), cell_caps=not answers)
        except InvalidSubmissionError as exc:
            if answers:
                raise BrokenAnswersError(f"{competition.id} answers: {exc}") from exc
            text = frame.text(name)
            if text is None:
                raise
            # parsed while reading: the check of the cells as written says what is wrong, so the
            # verdict and the message are those of the text check, however the file was read
            out[name] = convert_column(lookup(name), text)
    return out


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


@dataclass
class CheckedSubmission:
    """A submission that passed every rule, aligned row by row with the expected rows."""

    columns: dict[str, Values]
    expected_order: np.ndarray
    warnings: list[str]
    file_rows: np.ndarray | None = None  # the submission's row (0-based, header excluded) of each aligned row


def check_submission(competition: Competition, frame: Frame, expected_keys: Values) -> CheckedSubmission:
    """The one submission check, shared by validation (keys of the sample submission) and grading
    (keys of the answers): columns, kinds and values, ids, row sums. Raises InvalidSubmissionError."""
    warnings = check_columns(competition, frame)
    submission = _convert(competition, frame, answers=False)
    matching = competition.matching
    id_label = "/".join(competition.id_columns)
    alignment = align(
        expected_keys,
        keys_of(submission, competition.id_columns),
        duplicate_ids=bool(matching.get("duplicate_ids")),
        extra_ids=bool(matching.get("extra_ids")),
        id_label=id_label,
    )
    if alignment.ignored_extra_rows:
        warnings.append(f"ignored {alignment.ignored_extra_rows} row(s) whose {id_label} is not scored")
    aligned = {k: take(v, alignment.submission_order) for k, v in submission.items()}
    _check_row_sums(competition, aligned, alignment.submission_order)
    return CheckedSubmission(aligned, alignment.answer_order, warnings, alignment.submission_order)


def expected_keys(competition: Competition, frame: Frame, *, answers: bool) -> Values:
    """Row keys of the answers (``answers=True``) or of the sample submission."""
    lookup = competition.answer_column if answers else competition.column
    converted = {}
    for name in competition.id_columns:
        try:
            converted[name] = convert_column(lookup(name), frame.arrow(name))
        except (InvalidSubmissionError, KeyError) as exc:
            what = "answers" if answers else "sample submission"
            raise BrokenAnswersError(f"{competition.id}: the {what} id column {name!r} is unusable: {exc}") from exc
    return keys_of(converted, competition.id_columns)


def score_frames(competition: Competition, answers_frame: Frame, submission_frame: Frame) -> tuple[float, list[str]]:
    """Check a submission against the answers and score it; returns (score, warnings)."""
    converted = _convert(competition, answers_frame, answers=True)
    checked = check_submission(competition, submission_frame, keys_of(converted, competition.id_columns))
    spec = competition.metric
    used_answers = {a for _, a in competition.targets} | _input_columns(spec.inputs, "answers")
    used_submission = {s for s, _ in competition.targets} | _input_columns(spec.inputs, "submission")
    if spec.where:
        used_answers.add(spec.where["column"])
    answers = {k: as_numpy(take(converted[k], checked.expected_order)) for k in used_answers}
    submission = {k: as_numpy(checked.columns[k]) for k in used_submission - {FILE_ROW}}
    if FILE_ROW in used_submission and checked.file_rows is not None:
        submission[FILE_ROW] = checked.file_rows
    if spec.where:
        keep = _where(spec.where, answers)
        answers = {k: v[keep] for k, v in answers.items()}
        submission = {k: v[keep] for k, v in submission.items()}
    y_true = _stack(answers, [a for _, a in competition.targets])
    y_pred = _stack(submission, [s for s, _ in competition.targets])
    inputs = {k: _input(v, answers, submission) for k, v in spec.inputs.items()}
    # Token metrics build millions of short-lived lists; the cyclic garbage collector rescanning
    # them cost 3.4 s of 3.8 s on 1.2M cells in benchmarks/ (none of them form cycles).
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = spec.metric.fn(y_true, y_pred, **inputs, **spec.options)
    finally:
        if collecting:
            gc.enable()
    return float(value), checked.warnings


def _input_columns(inputs: Mapping[str, Any], side: str) -> set[str]:
    names: set[str] = set()
    for spec in inputs.values():
        if isinstance(spec, str):
            if spec.startswith(side + "."):
                names.add(spec.partition(".")[2])
        elif side in spec:
            names.update(spec[side])
    return names


def _row_sums_ok(sums: np.ndarray, rule: Mapping[str, Any]) -> tuple[np.ndarray, str]:
    """Which row sums pass the declared rule, and the rule in words.

    ``mode: abs`` (default): |sum - 1| <= ``tolerance``. ``mode: isclose``: numpy ``isclose(sum,
    1, rtol, atol)``, i.e. |sum - 1| <= atol + rtol. ``mode: round``: the sum rounded to
    ``decimals`` equals 1, with numpy's rounding (pandas ``Series.round``) or, with ``rounding:
    python``, Python's ``round``.
    """
    mode = rule.get("mode", "abs")
    if mode == "abs":
        tolerance = float(rule.get("tolerance", 1e-6))
        return np.abs(sums - 1.0) <= tolerance, f"|sum - 1| <= {tolerance:g}"
    if mode == "isclose":
        rtol, atol = float(rule.get("rtol", 1e-5)), float(rule.get("atol", 1e-8))
        return np.isclose(sums, 1.0, rtol=rtol, atol=atol), f"|sum - 1| <= {atol:g} + {rtol:g}"
    if mode == "round":
        decimals = int(rule["decimals"])
        if rule.get("rounding", "numpy") == "python":
            ok = np.fromiter((round(s, decimals) == 1 for s in sums.tolist()), dtype=bool, count=sums.size)
        else:
            ok = np.round(sums, decimals) == 1
        return ok, f"the sum rounded to {decimals} decimals equals 1"
    raise ValueError(f"unknown row_sum mode {mode!r}")


def _check_row_sums(competition: Competition, submission: Mapping[str, np.ndarray], file_rows: np.ndarray) -> None:
    rule = competition.checks.get("row_sum")
    if not rule:
        return
    names = list(rule["columns"])
    sums = np.array(as_numpy(submission[names[0]]), dtype=np.float64)
    for name in names[1:]:  # column by column, left to right: the order pandas' row sum adds in
        sums = sums + as_numpy(submission[name])
    ok, stated = _row_sums_ok(sums, rule)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        order = np.argsort(file_rows[bad], kind="stable")[:5]
        examples = [f"row {int(file_rows[bad[i]]) + 2}: sum {sums[bad[i]]:.10f}" for i in order]
        raise InvalidSubmissionError(
            f"probabilities over {len(names)} columns must sum to 1 on every row ({stated}); {bad.size} row(s) do not",
            examples=examples,
            fix="normalise each row (divide every probability by the row's sum)",
        )


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
    """The largest submission file accepted: :func:`podium.submission_file.size_cap` of the sample
    submission (of the answers where no sample submission is prepared), as validation applies it."""
    sample = data_dir / competition.id / "prepared" / competition.sample_submission
    try:
        reference = os.stat(sample).st_size
    except OSError:
        reference = os.stat(answers_path(competition, data_dir)).st_size
    return size_cap(reference)


def read_submission(competition: Competition, file: SubmissionFile) -> Frame:
    """Read an open submission the one way validation and grading both read it."""
    if not file.name.lower().endswith(".csv"):
        raise InvalidSubmissionError(f"the submission must be a .csv file, got {file.name}")
    return read_csv(file, numeric=numeric_columns(competition.columns, submission=True))


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
    :func:`podium.isolation.grade_isolated`, which opens it inside the run's folder and bounds
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
        return grade_file(competition, file, data, answers=answers)


def grade_file(
    competition: Competition, file: SubmissionFile, data_dir: str | Path | None = None, *, answers: Frame | None = None
) -> GradeReport:
    """Grade an opened submission (see :mod:`podium.submission_file`) against the prepared answers."""
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
    marker = data_dir / competition.id / "prepared" / "podium.json"
    if not marker.is_file():
        return None
    version = json.loads(marker.read_text(encoding="utf-8")).get("version")
    return int(version) if version is not None else None

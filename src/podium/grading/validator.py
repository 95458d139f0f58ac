"""Format validation without answers: what the in-sandbox validation endpoint runs.

It applies exactly the check grading applies (:func:`podium.grading.check.check_submission`), with
the expected ids taken from the sample submission, and never returns a score.
"""

from __future__ import annotations

from pathlib import Path

from podium.competition import Competition
from podium.errors import BrokenAnswersError, DataNotFoundError, InvalidSubmissionError
from podium.grading.check import check_submission, expected_keys, read_submission
from podium.grading.files import SubmissionFile, open_user_file, size_cap
from podium.grading.table import read_csv
from podium.records import ValidationResult

__all__ = ["ValidationResult", "validate", "validate_file"]


def _sample(competition: Competition, sample_submission: str | Path) -> Path:
    sample_path = Path(sample_submission)
    if not sample_path.is_file():
        raise DataNotFoundError(f"sample submission for {competition.id} not found at {sample_path}")
    return sample_path


def validate(competition: Competition, submission: str | Path, sample_submission: str | Path) -> ValidationResult:
    """Check ``submission`` against the schema and ids of ``sample_submission``.

    The file is opened as :func:`podium.grading.grader.grade` opens it (a regular file, not a link, FIFO,
    device or directory, under the same size cap) and read and checked by the same functions, so
    both give the same verdict and message on the same file.
    """
    sample_path = _sample(competition, sample_submission)
    try:
        file = open_user_file(submission, max_bytes=size_cap(sample_path.stat().st_size))
    except InvalidSubmissionError as exc:  # also NoSubmissionError: "no submission file at ..."
        return ValidationResult(False, str(exc))
    with file:
        return validate_file(competition, file, sample_path)


def validate_file(competition: Competition, file: SubmissionFile, sample_submission: str | Path) -> ValidationResult:
    """Check an opened submission against the schema and ids of ``sample_submission``."""
    sample_path = _sample(competition, sample_submission)
    try:
        sample = read_csv(sample_path, what="sample submission")
    except InvalidSubmissionError as exc:
        raise BrokenAnswersError(f"the sample submission {sample_path} is unreadable: {exc}") from exc
    keys = expected_keys(competition, sample, answers=False)
    try:
        checked = check_submission(competition, read_submission(competition, file), keys)
    except InvalidSubmissionError as exc:
        return ValidationResult(False, str(exc))
    return ValidationResult(True, None, checked.warnings)

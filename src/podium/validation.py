"""Format validation without answers: what the in-sandbox validation endpoint runs.

It applies exactly the check grading applies (``podium.grading.check_submission``), with the
expected ids taken from the sample submission, and never returns a score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from podium.competition import Competition
from podium.errors import BrokenAnswersError, DataNotFoundError, InvalidSubmissionError
from podium.grading import check_submission, expected_keys
from podium.table import read_csv

__all__ = ["ValidationResult", "validate"]


@dataclass
class ValidationResult:
    """Whether a submission would be accepted for grading, and why not."""

    valid: bool
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate(competition: Competition, submission: str | Path, sample_submission: str | Path) -> ValidationResult:
    """Check ``submission`` against the schema and ids of ``sample_submission``."""
    sample_path = Path(sample_submission)
    if not sample_path.is_file():
        raise DataNotFoundError(f"sample submission for {competition.id} not found at {sample_path}")
    path = Path(submission)
    if path.is_dir():
        return ValidationResult(False, f"the submission {path} is a directory, not a CSV file")
    if not path.is_file():
        return ValidationResult(False, f"no submission file at {path}")
    if path.suffix.lower() != ".csv":
        return ValidationResult(False, f"the submission must be a .csv file, got {path.name}")
    try:
        sample = read_csv(sample_path, what="sample submission")
    except InvalidSubmissionError as exc:
        raise BrokenAnswersError(f"the sample submission {sample_path} is unreadable: {exc}") from exc
    keys = expected_keys(competition, sample, answers=False)
    try:
        checked = check_submission(competition, read_csv(path), keys)
    except InvalidSubmissionError as exc:
        return ValidationResult(False, str(exc))
    return ValidationResult(True, None, checked.warnings)

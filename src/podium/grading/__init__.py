"""Grading: a submission and the private answers in, a grade out; and the same check without answers.

- :mod:`~podium.grading.files` opens a file an agent wrote without being led anywhere else by it;
- :mod:`~podium.grading.table` is the one CSV reader (and writer) of submissions, answers and samples;
- :mod:`~podium.grading.check` is the one submission check (columns, cell kinds from
  :mod:`~podium.grading.columns`, ids from :mod:`~podium.grading.align`, row sums);
- :mod:`~podium.grading.grader` scores a checked submission and places it on the leaderboard;
  :mod:`~podium.grading.validator` gives the check's verdict against the sample submission only;
- :mod:`~podium.grading.isolated` does either in a child process with memory and time caps (what
  ``podium run`` and the validation endpoint use on an agent's files);
- :mod:`~podium.grading.holdout` scores an agent's predictions against its own labels with the competition's
  metric and checks (the in-sandbox hold-out scorer);
- :mod:`~podium.grading.jsonl` grades MLE-bench's submission lists (``podium example``, which grades generated
  submissions of every competition, sits above with the fixtures: :mod:`podium.example`).

Only :class:`~podium.errors.InvalidSubmissionError` makes a submission invalid; anything else is
the harness's problem and propagates.
"""

from __future__ import annotations

from podium.grading.check import CheckedSubmission, check_submission, expected_keys, read_submission
from podium.grading.files import NoSubmissionError, SubmissionFile, open_submission, open_user_file, size_cap
from podium.grading.grader import (
    SCORE_DECIMALS,
    answers_path,
    grade,
    grade_file,
    grade_frames,
    grade_score,
    load_answers,
    score_frames,
    submission_size_cap,
    unscored_report,
)
from podium.grading.holdout import HoldoutScore, score_holdout
from podium.grading.isolated import Limits, grade_isolated, score_holdout_isolated, validate_isolated
from podium.grading.jsonl import grade_jsonl, read_submission_list, summarise
from podium.grading.table import Frame, read_csv, write_csv
from podium.grading.validator import validate, validate_file
from podium.records import GradeReport, ValidationResult

__all__ = [
    "SCORE_DECIMALS", "CheckedSubmission", "Frame", "GradeReport", "HoldoutScore", "Limits", "NoSubmissionError",
    "SubmissionFile", "ValidationResult", "answers_path", "check_submission", "expected_keys", "grade", "grade_file",
    "grade_frames", "grade_isolated", "grade_jsonl", "grade_score", "load_answers", "open_submission",
    "open_user_file", "read_csv", "read_submission", "read_submission_list", "score_frames", "score_holdout",
    "score_holdout_isolated", "size_cap", "submission_size_cap", "summarise", "unscored_report", "validate",
    "validate_file", "validate_isolated", "write_csv"
]  # fmt: skip

"""osic-pulmonary-fibrosis-progression: answers hold every patient-week, FVC empty where no visit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from podium.competition import Competition
from podium.errors import InvalidSubmissionError
from podium.grading.align import pandas_sort_order
from podium.grading.table import Frame, read_csv, write_csv


def load_answers(path: Path) -> Frame:
    """Read the answers; an empty FVC becomes 0 with has_fvc = 0, so the row is left unscored."""
    frame = read_csv(path, what="answers")
    fvc = frame["FVC"]
    visited = ~np.isin(np.char.lower(fvc.astype(str)), ["", "nan"])
    columns = dict(frame.columns)
    columns["FVC"] = np.where(visited, fvc, "0").astype(object)
    columns["has_fvc"] = np.where(visited, "1", "0").astype(object)
    return Frame(columns, frame.n_rows)


def write_answers(frame: Frame, path: Path) -> None:
    """Write answers as the benchmark does: FVC empty on rows without a visit, no has_fvc column."""
    columns = {k: v for k, v in frame.columns.items() if k != "has_fvc"}
    columns["FVC"] = np.where(frame["has_fvc"] == "1", frame["FVC"], "").astype(object)
    write_csv(Frame(columns, frame.n_rows), path)


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    """Every patient-week over 8 weeks; each patient has between 3 and 6 visits."""
    weeks = np.arange(-2, 6)
    patients = [f"ID{i:05d}" for i in range(max(1, n // len(weeks)))]
    rows = []
    for patient in patients:
        visits = set(rng.choice(weeks, int(rng.integers(3, 7)), replace=False).tolist())
        for week in weeks:
            seen = int(week) in visits
            fvc = str(int(rng.integers(1500, 4000))) if seen else "0"
            rows.append((patient, str(week), fvc, f"{patient}_{week}", "100", "1" if seen else "0"))
    names = ("Patient", "Weeks", "FVC", "Patient_Week", "Confidence", "has_fvc")
    return Frame({name: np.array([r[i] for r in rows], dtype=object) for i, name in enumerate(names)}, len(rows))


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    """The true FVC with the smallest confidence that is not raised (70)."""
    confidence = np.full(answers.n_rows, "70", dtype=object)
    return Frame(
        {"Patient_Week": answers["Patient_Week"], "FVC": answers["FVC"], "Confidence": confidence}, answers.n_rows
    )


def pair_rows(answers: dict[str, np.ndarray], submission: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Version 1: the rows the published grader scores, and how it pairs them.

    The scored answer rows are each patient's last 3 visits (rows with an FVC, sorted by week with
    pandas' default sort). The submission keeps its rows whose Patient_Week is scored (every copy
    of a repeated one), the answers keep the scored rows the submission names; both are sorted by
    Patient_Week and paired by position. A dropped row is simply not scored; counts that differ
    (a scored Patient_Week written twice) fail there, so the file is invalid.
    """
    visited = np.flatnonzero(np.asarray(answers["has_fvc"]).astype(np.int64) == 1)
    by_week = visited[pandas_sort_order(np.asarray(answers["Weeks"], dtype=np.int64)[visited])]
    patients = np.asarray(answers["Patient"], dtype=object)[by_week]
    seen: dict[object, int] = {}
    last_three = np.zeros(by_week.size, bool)
    for i in range(by_week.size - 1, -1, -1):  # groupby(Patient).tail(3): each patient's last 3 in this order
        seen[patients[i]] = seen.get(patients[i], 0) + 1
        last_three[i] = seen[patients[i]] <= 3
    scored = by_week[last_three]
    answer_ids = np.asarray(answers["Patient_Week"], dtype=object)
    submission_ids = np.asarray(submission["Patient_Week"], dtype=object)
    submission_rows = np.flatnonzero(np.isin(submission_ids, answer_ids[scored]))
    submission_rows = submission_rows[pandas_sort_order(submission_ids[submission_rows])]
    answer_rows = scored[pandas_sort_order(answer_ids[scored])]
    answer_rows = answer_rows[np.isin(answer_ids[answer_rows], submission_ids[submission_rows])]
    if answer_rows.size != submission_rows.size:
        raise InvalidSubmissionError(
            f"{submission_rows.size} submission row(s) name scored Patient_Week values, which match "
            f"{answer_rows.size} test row(s); the published grader pairs them by position and fails",
            fix="write each Patient_Week once",
        )
    return answer_rows, submission_rows

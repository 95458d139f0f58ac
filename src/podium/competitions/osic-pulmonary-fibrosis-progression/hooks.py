"""osic-pulmonary-fibrosis-progression: answers hold every patient-week, FVC empty where no visit."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from podium.competition import Competition
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

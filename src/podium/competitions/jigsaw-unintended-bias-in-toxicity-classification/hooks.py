"""Answers for jigsaw-unintended-bias: identity columns are empty where a comment was not annotated."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, read_csv

IDENTITIES = (
    "male",
    "female",
    "homosexual_gay_or_lesbian",
    "christian",
    "jewish",
    "muslim",
    "black",
    "white",
    "psychiatric_or_mental_illness",
)


def load_answers(path: Path) -> Frame:
    """The private test set, with a missing identity value read as 0 (not annotated = absent)."""
    frame = read_csv(path, what="answers")
    for name in IDENTITIES:
        if name in frame.columns:
            cells = frame[name]
            missing = np.isin(np.char.lower(cells.astype(str)), ["", "nan"])
            frame.columns[name] = np.where(missing, "0", cells).astype(object)
    return frame


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    """The true toxicity as the prediction (the answers name the scored column toxicity)."""
    return Frame({"id": answers["id"], "prediction": answers["toxicity"]}, answers.n_rows)

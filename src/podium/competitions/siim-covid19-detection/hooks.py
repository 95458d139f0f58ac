"""Fixture hooks: study rows and image rows in one answers file, as the competition lays them out."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records

STUDY_LABELS = ("negative", "typical", "indeterminate", "atypical")


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    rows = []
    for i in range(n // 2):
        rows.append((f"{i:04d}f3a1c2b9_study", f"{STUDY_LABELS[i % 4]} 1 0 0 1 1"))
    for i in range(n - n // 2):
        boxes = []
        for _ in range(int(rng.integers(0, 3))):
            x1, y1 = rng.uniform(0, 2000, 2).round(2)
            w, h = rng.uniform(100, 900, 2).round(2)
            boxes.append(f"opacity 1 {x1:.2f} {y1:.2f} {x1 + w:.2f} {y1 + h:.2f}")
        rows.append((f"{i:04d}0b6e2d7a_image", " ".join(boxes) or "none 1 0 0 1 1"))
    return frame_from_records(["id", "PredictionString"], rows)


def sample_submission(competition: Competition, answers: Frame) -> Frame:
    study = np.char.endswith(answers["id"].astype(str), "_study")
    cells = np.where(study, "negative 1 0 0 1 1", "none 1 0 0 1 1").astype(object)
    return Frame({"id": answers["id"], "PredictionString": cells}, answers.n_rows)

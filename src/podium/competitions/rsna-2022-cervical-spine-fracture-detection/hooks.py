"""Fixture hook: answers in the real melted shape, eight rows (patient_overall, C1..C7) per study."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records

LABEL_TYPES = ("patient_overall", "C1", "C2", "C3", "C4", "C5", "C6", "C7")


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    rows = []
    for s in range(max(3, n // len(LABEL_TYPES))):
        study = f"1.2.826.0.1.3680043.{1000 + s}"
        vertebrae = rng.integers(0, 2, 7) * (s % 3 != 0)  # every third study has no fracture
        for label, value in zip(LABEL_TYPES, [int(vertebrae.any()), *vertebrae], strict=True):
            rows.append((study, label, value, f"{study}_{label}"))
    return frame_from_records(["StudyInstanceUID", "prediction_type", "fractured", "row_id"], rows)

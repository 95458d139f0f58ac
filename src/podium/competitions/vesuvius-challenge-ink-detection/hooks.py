"""Fixture hook: answers whose ink masks are never empty (F-beta is 0 on an empty truth)."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    from podium.metrics.masks import rle_encode

    rows = []
    for i in range(n):
        height, width = (int(v) for v in rng.integers(8, 17, 2))
        mask = rng.random((height, width)) < 0.3
        mask[rng.integers(height), rng.integers(width)] = True
        rows.append((f"frag_{i:02d}", rle_encode(mask, order="C"), width, height))
    return frame_from_records(["Id", "Predicted", "width", "height"], rows)

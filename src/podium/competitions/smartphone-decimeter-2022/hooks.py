"""Fixture hook: answers as a few trips, each a track of positions one second apart."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records

PHONES = ("GooglePixel4", "GooglePixel5", "SamsungGalaxyS20Ultra")


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    rows = []
    per_trip = max(2, n // len(PHONES))
    for t, phone in enumerate(PHONES):
        start = 1619650832000 + 10_000_000 * t
        lat = 37.4 + np.cumsum(rng.normal(0, 1e-4, per_trip))
        lon = -122.1 + np.cumsum(rng.normal(0, 1e-4, per_trip))
        for i in range(per_trip):
            rows.append(
                (f"2021-04-{20 + t}-US-MTV-1-{phone}", start + 1000 * i, repr(float(lat[i])), repr(float(lon[i])))
            )
    return frame_from_records(["tripId", "UnixTimeMillis", "LatitudeDegrees", "LongitudeDegrees"], rows)

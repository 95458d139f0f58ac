"""predict-volcanic-eruptions-ingv-oe: a 10% split of the labelled seismic segments.

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)``. Public:
``train.csv`` (segment_id, time_to_eruption), ``train/{segment_id}.csv`` and
``test/{segment_id}.csv`` (the segments' sensor readings, copied) and ``sample_submission.csv``
(time_to_eruption = 0). Private ``test.csv``: segment_id, time_to_eruption.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv 90/10 (seed 0) and copy each segment's CSV to its side."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    new_train, new_test = train_test_split(old, test_size=0.1, random_state=0)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.assign(time_to_eruption=0).to_csv(public / "sample_submission.csv", index=False)
    for folder, frame in (("train", new_train), ("test", new_test)):
        (public / folder).mkdir()
        for segment in frame["segment_id"]:
            shutil.copyfile(raw / "train" / f"{segment}.csv", public / folder / f"{segment}.csv")

    assert set(new_train["segment_id"]).isdisjoint(new_test["segment_id"])
    assert len(new_train) + len(new_test) == len(old) and len(list((public / "test").iterdir())) == len(new_test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.csv`` with 30 segments and ``train/{segment_id}.csv`` of 12 readings x 10 sensors (some empty)."""
    import pandas as pd

    segments = np.unique(rng.integers(1_000_000, 2_147_000_000, 30))
    pd.DataFrame({"segment_id": segments, "time_to_eruption": rng.integers(6_000, 49_000_000, 30)}).to_csv(
        raw / "train.csv", index=False
    )
    (raw / "train").mkdir()
    for segment in segments:
        readings = pd.DataFrame(rng.normal(0, 300, (12, 10)).round(), columns=[f"sensor_{k}" for k in range(1, 11)])
        readings.loc[:, "sensor_3"] = np.nan if segment % 2 else readings["sensor_3"]
        readings.to_csv(raw / "train" / f"{segment}.csv", index=False, float_format="%.0f")

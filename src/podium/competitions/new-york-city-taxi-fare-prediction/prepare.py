"""NYC taxi fare: a fixed-size random split of train.csv (facts: split, public, private).

Facts implemented: ``train_test_split(train.csv rows, test_size=9914, random_state=0)`` (9914 =
the size of Kaggle's own test set); the new train split is published as ``labels.csv`` (all 8
columns), public test.csv drops ``fare_amount``, private test.csv keeps all 8 columns, the sample
submission is ``key, fare_amount=11.35``; GCP-Coupons-Instructions.rtf is copied. A raw file with
no more rows than TEST_SIZE (the tiny generated fixture only) gets a 10% split instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 9914
SMALL_FRACTION = 0.1
COLUMNS = [
    "key",
    "fare_amount",
    "pickup_datetime",
    "pickup_longitude",
    "pickup_latitude",
    "dropoff_longitude",
    "dropoff_latitude",
    "passenger_count",
]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.split import SplitSpec, count_rows, split_csv

    n_rows = count_rows(raw / "train.csv")
    test_size: float | int = TEST_SIZE if n_rows > TEST_SIZE else SMALL_FRACTION
    spec = SplitSpec(
        source="train.csv",
        test_size=test_size,
        random_state=0,
        train_file="labels.csv",
        drop_from_test=("fare_amount",),
    )
    n_train, n_test = split_csv(spec, raw, public, private, "test.csv")
    shutil.copyfile(raw / "GCP-Coupons-Instructions.rtf", public / "GCP-Coupons-Instructions.rtf")
    answers = pd.read_csv(private / "test.csv", dtype=str, keep_default_na=False)
    pd.DataFrame({"key": answers["key"], "fare_amount": 11.35}).to_csv(public / "sample_submission.csv", index=False)

    test = pd.read_csv(public / "test.csv", dtype=str, keep_default_na=False, usecols=["key"])
    assert n_train + n_test == n_rows and n_test == len(answers) == len(test)
    assert n_rows <= TEST_SIZE or n_test == TEST_SIZE
    assert list(answers.columns) == COLUMNS
    assert "fare_amount" not in pd.read_csv(public / "test.csv", nrows=0).columns
    assert test["key"].tolist() == answers["key"].tolist()
    train_keys = set(pd.read_csv(public / "labels.csv", dtype=str, usecols=["key"])["key"])
    assert not train_keys & set(test["key"])


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (the 8 Kaggle columns, 120 trips) and a stub GCP-Coupons-Instructions.rtf."""
    import pandas as pd

    n = 120
    seconds = np.sort(rng.choice(6 * 365 * 86400, n, replace=False))
    times = pd.Timestamp("2009-01-01") + pd.to_timedelta(seconds, unit="s")
    stamps = times.strftime("%Y-%m-%d %H:%M:%S")
    frame = pd.DataFrame(
        {
            "key": [f"{s}.{i:07d}" for i, s in enumerate(stamps, start=1)],
            "fare_amount": rng.uniform(2.5, 60, n).round(2),
            "pickup_datetime": [f"{s} UTC" for s in stamps],
            "pickup_longitude": rng.uniform(-74.02, -73.93, n).round(6),
            "pickup_latitude": rng.uniform(40.70, 40.80, n).round(6),
            "dropoff_longitude": rng.uniform(-74.02, -73.93, n).round(6),
            "dropoff_latitude": rng.uniform(40.70, 40.80, n).round(6),
            "passenger_count": rng.integers(1, 7, n),
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    (raw / "GCP-Coupons-Instructions.rtf").write_text("{\\rtf1\\ansi Redeem your cloud credits here.}\n")

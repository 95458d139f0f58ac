"""PetFinder Pawpularity: split train.csv 90/10 with random_state 0; photos follow their Id.

Facts: train_test_split(test_size=0.1, random_state=0) on train.csv's rows; public train.csv (all
columns), test.csv (minus Pawpularity), train/{Id}.jpg and test/{Id}.jpg; sample_submission.csv
(Id, Pawpularity) with numpy default_rng(0).uniform(1, 100) rounded to 2 decimals; private test.csv
holds every train column including Pawpularity.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

FEATURES = (
    "Subject Focus",
    "Eyes",
    "Face",
    "Near",
    "Action",
    "Accessory",
    "Group",
    "Collage",
    "Human",
    "Occlusion",
    "Info",
    "Blur",
)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["Pawpularity"]).to_csv(public / "test.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    values = np.random.default_rng(0).uniform(1, 100, len(test)).round(2)
    sample = pd.DataFrame({"Id": test["Id"].to_numpy(), "Pawpularity": values})
    sample.to_csv(public / "sample_submission.csv", index=False)
    for split, frame in (("train", train), ("test", test)):
        (public / split).mkdir()
        for image_id in frame["Id"]:
            shutil.copyfile(raw / "train" / f"{image_id}.jpg", public / split / f"{image_id}.jpg")

    assert not set(train["Id"]) & set(test["Id"])
    assert len(train) + len(test) == len(table)
    assert sample["Id"].tolist() == test["Id"].tolist()
    assert "Pawpularity" not in pd.read_csv(public / "test.csv", nrows=0).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (40 rows, hex Ids, 12 binary features, Pawpularity 1..100) and train/{Id}.jpg."""
    import pandas as pd
    from PIL import Image

    n = 40
    ids = [f"{int(v):032x}" for v in rng.integers(0, 2**62, n)]
    table = pd.DataFrame(
        {"Id": ids, **{f: rng.integers(0, 2, n) for f in FEATURES}, "Pawpularity": rng.integers(1, 101, n)}
    )
    table.to_csv(raw / "train.csv", index=False)
    (raw / "train").mkdir()
    (raw / "test").mkdir()
    for image_id in ids:
        pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(raw / "train" / f"{image_id}.jpg")
    table.iloc[:2, :-1].assign(Id=["0" * 32, "1" * 32]).to_csv(raw / "test.csv", index=False)

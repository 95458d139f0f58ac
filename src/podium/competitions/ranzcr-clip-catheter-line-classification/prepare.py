"""RANZCR CLiP: a 10% image-level split of train.csv (facts: split, public, private).

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)`` by image (not
grouped by PatientID); public train.csv keeps every column, train_annotations.csv keeps the rows
of new-train studies only, images are copied from raw train/ into train/ and test/; private
test.csv keeps all train.csv columns (11 labels + PatientID); the sample submission holds only the
9 scored label columns, all 0.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np

SCORED = [
    "ETT - Abnormal",
    "ETT - Borderline",
    "ETT - Normal",
    "NGT - Abnormal",
    "NGT - Borderline",
    "NGT - Incompletely Imaged",
    "NGT - Normal",
    "CVC - Abnormal",
    "CVC - Borderline",
]
LABELS = [*SCORED, "CVC - Normal", "Swan Ganz Catheter Present"]
ID = "StudyInstanceUID"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    annotations = pd.read_csv(raw / "train_annotations.csv", dtype=str, keep_default_na=False)
    annotations = annotations[annotations[ID].isin(set(train[ID]))]

    train.to_csv(public / "train.csv", index=False)
    annotations.to_csv(public / "train_annotations.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    test[[ID]].assign(**dict.fromkeys(SCORED, 0)).to_csv(public / "sample_submission.csv", index=False)
    for folder, ids in (("train", train[ID]), ("test", test[ID])):
        (public / folder).mkdir()
        for uid in ids:
            shutil.copyfile(raw / "train" / f"{uid}.jpg", public / folder / f"{uid}.jpg")

    assert len(train) + len(test) == len(old)
    assert not set(train[ID]) & set(test[ID])
    assert list(test.columns) == [ID, *LABELS, "PatientID"]
    assert not set(annotations[ID]) & set(test[ID])
    assert len(list((public / "test").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (uid, 11 labels, PatientID; 100 studies), train_annotations.csv, train/{uid}.jpg."""
    import pandas as pd
    from PIL import Image

    n = 100
    uids = [f"1.2.826.0.1.3680043.8.498.{int(v)}" for v in rng.choice(10**12, n, replace=False)]
    frame = pd.DataFrame({ID: uids})
    for label in LABELS:
        frame[label] = rng.integers(0, 2, n)
    frame["PatientID"] = [f"ec{int(v):07x}" for v in rng.integers(0, 40, n)]
    frame.to_csv(raw / "train.csv", index=False)
    rows = [
        (uid, str(rng.choice(LABELS[:9])), json.dumps([[int(x), int(y)] for x, y in rng.integers(0, 8, (3, 2))]))
        for uid in uids[::3]
    ]
    pd.DataFrame(rows, columns=[ID, "label", "data"]).to_csv(raw / "train_annotations.csv", index=False)
    (raw / "train").mkdir()
    for uid in uids:
        buffer = io.BytesIO()
        Image.new("L", (8, 8), int(rng.integers(0, 256))).save(buffer, "JPEG")
        (raw / "train" / f"{uid}.jpg").write_bytes(buffer.getvalue())

"""VinBigData chest X-ray: a 10% split of the unique image ids (facts: split, public, private).

Facts implemented: ``train_test_split(train.csv image_id.unique(), test_size=0.1, random_state=0)``
(13,500 / 1,500 images asserted on the full data); public train.csv keeps every row (all
radiologists) of train images; DICOMs copied from raw train/ into train/ and test/; the answers
keep the first row per (image_id, class_id) (pandas ``groupby.first``), NaN -> 0 and class 14
("No finding") gets the box 0 0 1 1; the sample submission is "14 1 0 0 1 1" per test image, in
split order.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from podium.competition import load_module

_hooks = load_module(Path(__file__).parent, "hooks")
assert _hooks is not None
CLASS_NAMES: tuple[str, ...] = _hooks.CLASS_NAMES  # the 15 class names, shared with the answer hooks

FULL_IMAGES, EXPECTED_TRAIN, EXPECTED_TEST = 15000, 13500, 1500
COLUMNS = ["image_id", "class_name", "class_id", "rad_id", "x_min", "y_min", "x_max", "y_max"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv")
    unique_ids = np.asarray(old["image_id"].unique(), dtype=object)
    train_ids, test_ids = train_test_split(unique_ids, test_size=0.1, random_state=0)
    train = old[old["image_id"].isin(set(train_ids))]
    test = old[old["image_id"].isin(set(test_ids))]
    answers = test.groupby(by=["image_id", "class_id"]).first().reset_index().fillna(0)
    answers.loc[answers["class_id"] == 14, ["x_max", "y_max"]] = 1.0
    answers = answers[["image_id", "class_id", "class_name", "rad_id", "x_min", "y_min", "x_max", "y_max"]]

    train.to_csv(public / "train.csv", index=False)
    answers.to_csv(private / "answers.csv", index=False)
    sample = pd.DataFrame({"image_id": test_ids, "PredictionString": "14 1 0 0 1 1"})
    sample.to_csv(public / "sample_submission.csv", index=False)
    for folder, ids in (("train", train_ids), ("test", test_ids)):
        (public / folder).mkdir()
        for image_id in ids:
            shutil.copyfile(raw / "train" / f"{image_id}.dicom", public / folder / f"{image_id}.dicom")

    if len(unique_ids) == FULL_IMAGES:
        assert (len(train_ids), len(test_ids)) == (EXPECTED_TRAIN, EXPECTED_TEST)
    assert len(train) + len(test) == len(old) and list(train.columns) == COLUMNS
    assert not set(train["image_id"]) & set(answers["image_id"])
    assert set(answers["image_id"]) == set(sample["image_id"])
    assert not answers.duplicated(["image_id", "class_id"]).any()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (3 radiologist rows per image, 40 images; NaN boxes for "No finding") and train/{id}.dicom stubs."""
    import pandas as pd

    rows = []
    ids = [f"{int(v):032x}" for v in rng.choice(2**62, 40, replace=False)]
    for i, image_id in enumerate(ids):
        rads = rng.choice(17, 3, replace=False) + 1
        classes = [14] if i % 3 == 0 else list(rng.choice(14, int(rng.integers(1, 3)), replace=False))
        for rad in rads:
            for cls in classes:
                if cls == 14:
                    box: list[float] = [np.nan] * 4
                else:
                    x, y = rng.integers(100, 1800, 2)
                    w, h = rng.integers(30, 600, 2)
                    box = [float(x), float(y), float(x + w), float(y + h)]
                rows.append([image_id, CLASS_NAMES[int(cls)], int(cls), f"R{rad}", *box])
    pd.DataFrame(rows, columns=COLUMNS).to_csv(raw / "train.csv", index=False)
    (raw / "train").mkdir()
    for image_id in ids:
        (raw / "train" / f"{image_id}.dicom").write_bytes(b"\0" * 128 + b"DICM" + rng.bytes(64))

"""Plant Pathology 2020: a 10% split of train.csv with renamed image ids (facts: split, public).

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)``; new-train ids
become Train_0, Train_1, ... and new-test ids Test_0, Test_1, ... in split order, and the images
are copied under their new names to images/; public test.csv holds image_id only; private test.csv
holds image_id and the four 0/1 labels; the sample submission gives each class 0.25.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np

CLASSES = ["healthy", "multiple_diseases", "rust", "scab"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str)
    train, answers = train_test_split(old, test_size=0.1, random_state=0)
    renamed = {old_id: f"Train_{i}" for i, old_id in enumerate(train["image_id"].unique())}
    renamed |= {old_id: f"Test_{i}" for i, old_id in enumerate(answers["image_id"].unique())}

    (public / "images").mkdir()
    for old_id in old["image_id"]:
        shutil.copyfile(raw / "images" / f"{old_id}.jpg", public / "images" / f"{renamed[old_id]}.jpg")
    train = train.assign(image_id=train["image_id"].map(renamed))
    answers = answers.assign(image_id=answers["image_id"].map(renamed))
    sample = answers[["image_id"]].assign(**dict.fromkeys(CLASSES, 0.25))

    train.to_csv(public / "train.csv", index=False)
    answers[["image_id"]].to_csv(public / "test.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)

    assert len(train) + len(answers) == len(old) == len(renamed)
    assert list(answers.columns) == ["image_id", *CLASSES]
    assert answers["image_id"].str.startswith("Test_").all() and train["image_id"].str.startswith("Train_").all()
    assert len(list((public / "images").iterdir())) == len(old)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (Train_N + one-hot labels, 80 rows), images/Train_N.jpg and two raw Test_N.jpg (ignored)."""
    import pandas as pd
    from PIL import Image

    n = 80
    hot = rng.permutation(np.arange(n) % len(CLASSES))
    frame = pd.DataFrame({"image_id": [f"Train_{i}" for i in range(n)]})
    for j, name in enumerate(CLASSES):
        frame[name] = (hot == j).astype(int)
    frame.to_csv(raw / "train.csv", index=False)
    pd.DataFrame({"image_id": ["Test_0", "Test_1"]}).to_csv(raw / "test.csv", index=False)
    (raw / "images").mkdir()
    for name in [*frame["image_id"], "Test_0", "Test_1"]:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
        (raw / "images" / f"{name}.jpg").write_bytes(buffer.getvalue())

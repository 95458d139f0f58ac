"""Prepare plant-pathology-2021-fgvc8 (facts: split, public, private, sample_submission).

train.csv (18,632 rows: image, labels) is split with ``train_test_split(test_size=0.2,
random_state=0)``; images are copied from raw train_images/ into public train_images/ and
test_images/. Answers: answers.csv (image, labels); sample submission labels = "healthy".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 0.2


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv 80/20 and copy each side's images."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(old, test_size=TEST_SIZE, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    test.to_csv(private / "answers.csv", index=False)
    sample = test[["image"]].assign(labels="healthy")
    sample.to_csv(public / "sample_submission.csv", index=False)
    for frame, folder in ((train, "train_images"), (test, "test_images")):
        (public / folder).mkdir()
        for image in frame["image"]:
            shutil.copyfile(raw / "train_images" / image, public / folder / image)

    assert set(train["image"]).isdisjoint(test["image"]) and len(train) + len(test) == len(old)
    assert sample["image"].tolist() == test["image"].tolist()
    assert len(list((public / "test_images").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 30 rows and a tiny jpg per row in train_images/."""
    import pandas as pd
    from PIL import Image

    diseases = ["healthy", "scab", "frog_eye_leaf_spot", "rust", "complex", "powdery_mildew", "scab frog_eye_leaf_spot"]
    images = [f"{rng.bytes(8).hex()}.jpg" for _ in range(30)]
    pd.DataFrame({"image": images, "labels": rng.choice(diseases, len(images))}).to_csv(raw / "train.csv", index=False)
    (raw / "train_images").mkdir()
    (raw / "test_images").mkdir()
    for image in images:
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(raw / "train_images" / image)
    (raw / "sample_submission.csv").write_text("image,labels\n")

"""paddy-disease-classification: a 75/25 split of the labelled leaf images.

Facts implemented: ``train_test_split(train.csv, train_size=0.75, random_state=0)``; the raw
sample submission is read only to check its column set. Public: ``train.csv`` (image_id, label,
variety, age), ``train_images/{label}/{image_id}``, ``test_images/{image_id}`` (flat) and
``sample_submission.csv`` (image_id, label = ""). Private ``test.csv``: all four columns.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

LABELS = ["bacterial_leaf_blight", "blast", "brown_spot", "dead_heart", "hispa", "normal", "tungro"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv (train_size 0.75, seed 0); copy images into the public folders."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    old_sample = pd.read_csv(raw / "sample_submission.csv", nrows=0)
    new_train, new_test = train_test_split(old, train_size=0.75, random_state=0)
    sample = new_test[["image_id", "label"]].assign(label="")
    new_train.to_csv(public / "train.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    for row in new_train.itertuples():
        (public / "train_images" / row.label).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(
            raw / "train_images" / row.label / row.image_id, public / "train_images" / row.label / row.image_id
        )
    (public / "test_images").mkdir()
    for row in new_test.itertuples():
        shutil.copyfile(raw / "train_images" / row.label / row.image_id, public / "test_images" / row.image_id)

    assert set(new_train["image_id"]).isdisjoint(new_test["image_id"]) and len(new_train) + len(new_test) == len(old)
    assert set(sample.columns) == set(old_sample.columns), "the sample submission's columns changed"
    assert len(list((public / "test_images").iterdir())) == len(new_test)
    assert len(list((public / "train_images").glob("*/*"))) == len(new_train)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.csv`` with 32 rows, 6x6 jpgs under ``train_images/{label}/``, a sample_submission.csv header."""
    from PIL import Image

    rows = ["image_id,label,variety,age"]
    for i in range(32):
        image_id, label = f"{100330 + 7 * i}.jpg", LABELS[i % len(LABELS)]
        rows.append(f"{image_id},{label},{rng.choice(['ADT45', 'KarnatakaPonni', 'Ponni'])},{rng.integers(45, 82)}")
        (raw / "train_images" / label).mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).save(raw / "train_images" / label / image_id)
    (raw / "train.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (raw / "sample_submission.csv").write_text("image_id,label\n200001.jpg,\n200002.jpg,\n", encoding="utf-8")

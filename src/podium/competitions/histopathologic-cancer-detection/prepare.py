"""histopathologic-cancer-detection: hold out as many labelled patches as Kaggle's test set had.

Facts implemented: the raw ``test/*.tif`` files are only counted; ``train_test_split(train_labels.id,
test_size=n_test / (n_labelled + n_test), random_state=0)`` picks the new test ids (~0.207). Rows keep
their train_labels.csv order. Public: ``train_labels.csv`` (id, label), ``train/{id}.tif``,
``test/{id}.tif`` and ``sample_submission.csv`` (label = 0). Private ``answers.csv``: id, label.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the labelled ids with the raw test set's share, copy the patches, write the CSVs."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train_labels.csv", dtype={"id": str})
    n_test = len(list((raw / "test").glob("*.tif")))
    _, test_ids = train_test_split(old["id"], test_size=n_test / (len(old) + n_test), random_state=0)
    in_test = old["id"].isin(test_ids)
    new_train, new_test = old[~in_test], old[in_test]
    for folder, frame in (("train", new_train), ("test", new_test)):
        (public / folder).mkdir()
        for image_id in frame["id"]:
            shutil.copyfile(raw / "train" / f"{image_id}.tif", public / folder / f"{image_id}.tif")
    new_train.to_csv(public / "train_labels.csv", index=False)
    new_test.to_csv(private / "answers.csv", index=False)
    new_test.assign(label=0).to_csv(public / "sample_submission.csv", index=False)

    assert set(new_train["id"]).isdisjoint(new_test["id"]) and len(new_train) + len(new_test) == len(old)
    assert len(new_test) == len(test_ids) > 0 and len(list((public / "test").iterdir())) == len(new_test)
    assert len(list((public / "train").iterdir())) == len(new_train)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train_labels.csv`` with 30 ids and their 8x8 RGB ``train/{id}.tif``; 8 unlabelled ``test/*.tif``."""
    import pandas as pd
    from PIL import Image

    ids = ["".join(rng.choice(list("0123456789abcdef"), 40)) for _ in range(38)]
    for folder in ("train", "test"):
        (raw / folder).mkdir()
    for i, image_id in enumerate(ids):
        pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(raw / ("train" if i < 30 else "test") / f"{image_id}.tif")
    labels = rng.integers(0, 2, 30)
    labels[:2] = [0, 1]
    pd.DataFrame({"id": ids[:30], "label": labels}).to_csv(raw / "train_labels.csv", index=False)

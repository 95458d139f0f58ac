"""Dog Breed Identification: a 10% split of labels.csv with one-hot answers (facts: split, private).

Facts implemented: ``train_test_split(labels.csv, test_size=0.1, random_state=0)``; public
labels.csv (id, breed) for the new train, images copied from raw train/ into train/ and test/;
private test.csv is id plus the 120 breed columns (alphabetical, Kaggle's header) one-hot; the
sample submission gives every breed 1/120.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np


def _breeds() -> list[str]:
    import yaml

    declaration = yaml.safe_load((Path(__file__).parent / "competition.yaml").read_text())
    return [str(b) for b in declaration["class_columns"]["names"]]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    breeds = _breeds()
    old = pd.read_csv(raw / "labels.csv", dtype=str)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    assert set(old["breed"]) <= set(breeds), "unknown breed in labels.csv"

    one_hot = pd.DataFrame({b: (test["breed"] == b).astype(int).to_numpy() for b in breeds}, index=test.index)
    answers = pd.concat([test[["id"]], one_hot], axis=1)
    sample = answers.copy()
    sample[breeds] = 1 / 120

    train.to_csv(public / "labels.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    for folder, ids in (("train", train["id"]), ("test", test["id"])):
        (public / folder).mkdir()
        for image_id in ids:
            shutil.copyfile(raw / "train" / f"{image_id}.jpg", public / folder / f"{image_id}.jpg")

    assert len(train) + len(test) == len(old)
    assert not set(train["id"]) & set(test["id"])
    assert answers.shape == sample.shape == (len(test), 121)
    assert (answers[breeds].sum(axis=1) == 1).all()
    assert len(list((public / "test").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """labels.csv (id, breed) with 40 dogs and an 8x8 jpg per id under train/; plus a raw test/ image."""
    import pandas as pd
    from PIL import Image

    breeds = _breeds()
    n = 40
    ids = [f"{int(v):032x}" for v in rng.choice(2**62, n, replace=False)]
    pd.DataFrame({"id": ids, "breed": rng.choice(breeds, n)}).to_csv(raw / "labels.csv", index=False)
    for folder, names in (("train", ids), ("test", ["ffffffffffffffffffffffffffffffff"])):
        (raw / folder).mkdir()
        for name in names:
            buffer = io.BytesIO()
            Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
            (raw / folder / f"{name}.jpg").write_bytes(buffer.getvalue())

"""imet-2020-fgvc7: split the labelled artwork images into train and test.

Facts implemented: train.csv (142,119 rows; id, attribute_ids) is split with
``train_test_split(test_size=0.15, random_state=0)``; public holds train.csv, labels.csv (copied),
train/{id}.png, test/{id}.png and a sample submission with attribute_ids "0 1 2"; there is no public
test.csv. private/answers.csv holds id, attribute_ids. The raw test/ folder and sample submission are
not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv", dtype={"id": str, "attribute_ids": str})
    train, test = train_test_split(table, test_size=0.15, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    shutil.copyfile(raw / "labels.csv", public / "labels.csv")
    test[["id", "attribute_ids"]].to_csv(private / "answers.csv", index=False)
    test[["id"]].assign(attribute_ids="0 1 2").to_csv(public / "sample_submission.csv", index=False)
    for frame, folder in ((train, "train"), (test, "test")):
        (public / folder).mkdir()
        for image_id in frame["id"]:
            shutil.copyfile(raw / "train" / f"{image_id}.png", public / folder / f"{image_id}.png")

    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(table)
    assert len(list((public / "test").iterdir())) == len(test)
    assert not (public / "test.csv").exists()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 40 images (1-3 attribute ids each), labels.csv, a tiny PNG per id."""
    import pandas as pd
    from PIL import Image

    ids = [f"{int(v):032x}" for v in rng.integers(0, 2**62, 40)]
    attributes = [" ".join(map(str, sorted(rng.choice(12, int(rng.integers(1, 4)), replace=False)))) for _ in ids]
    pd.DataFrame({"id": ids, "attribute_ids": attributes}).to_csv(raw / "train.csv", index=False)
    names = [f"country::{c}" for c in "abcdef"] + [f"tag::{t}" for t in "ghijkl"]
    pd.DataFrame({"attribute_id": range(12), "attribute_name": names}).to_csv(raw / "labels.csv", index=False)
    (raw / "train").mkdir()
    for image_id in ids:
        Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).save(raw / "train" / f"{image_id}.png")
    (raw / "test").mkdir()
    Image.fromarray(np.zeros((6, 6, 3), dtype=np.uint8)).save(raw / "test" / "00000000000000000000000000000000.png")
    pd.DataFrame({"id": ["00000000000000000000000000000000"], "attribute_ids": ["0 1 2"]}).to_csv(
        raw / "sample_submission.csv", index=False
    )

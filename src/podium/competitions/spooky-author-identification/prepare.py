"""Prepare Spooky Author Identification (sentence -> author, 3 classes).

Facts: raw ``train.zip`` holds ``train.csv`` (id, text, author in EAP/HPL/MWS); it is split with
``train_test_split(test_size=0.1, random_state=0)``; public test.csv drops ``author``; the answers
are one-hot ``[id, EAP, HPL, MWS]``; the sample submission holds Kaggle's class priors.
Raw test.zip and sample_submission.zip are ignored.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

CLASSES = ["EAP", "HPL", "MWS"]
PRIORS = {"EAP": 0.403493538995863, "HPL": 0.287808366106543, "MWS": 0.308698094897594}


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv (inside train.zip) into public train/test, one-hot answers and a sample."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "train.zip") as archive, archive.open("train.csv") as handle:
        old = pd.read_csv(handle, dtype=str, keep_default_na=False)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    answers = test[["id"]].copy()
    for name in CLASSES:
        answers[name] = (test["author"] == name).astype(int)
    sample = answers[["id"]].assign(**PRIORS)

    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["author"]).to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)

    assert len(train) + len(test) == len(old)
    assert not set(train["id"]) & set(test["id"])
    assert (answers[CLASSES].sum(axis=1) == 1).all(), "every test author must be one of EAP/HPL/MWS"
    assert list(sample["id"]) == list(answers["id"])
    assert "author" not in pd.read_csv(public / "test.csv", nrows=0).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """A tiny train.zip holding train.csv (id, text, author)."""
    import pandas as pd

    words = ["the", "night", "was", "dark", "and", "I", "felt", "a", "strange", "dread", "upon", "sea,"]
    frame = pd.DataFrame(
        {
            "id": [f"id{int(n):05d}" for n in rng.choice(99999, 40, replace=False)],
            "text": [" ".join(rng.choice(words, int(rng.integers(4, 12)))) + "." for _ in range(40)],
            "author": [CLASSES[i % 3] for i in range(40)],
        }
    )
    with zipfile.ZipFile(raw / "train.zip", "w") as archive:
        archive.writestr("train.csv", frame.to_csv(index=False))

"""Detecting Insults: no new split; Kaggle's labelled test set (test_with_solutions.csv) is the test.

Facts: public train.csv is raw train.csv unchanged (Insult, Date, Comment); public test.csv holds
Date and Comment; sample_submission_null.csv holds Insult = 0, Date, Comment; private test.csv holds
Insult, Date, Comment, Usage and private gold_submission.csv holds Insult, Date, Comment. Rows are
keyed on the Comment text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    shutil.copyfile(raw / "train.csv", public / "train.csv")
    test = pd.read_csv(raw / "test_with_solutions.csv", dtype=str, keep_default_na=False)
    test[["Insult", "Date", "Comment", "Usage"]].to_csv(private / "test.csv", index=False)
    test[["Insult", "Date", "Comment"]].to_csv(private / "gold_submission.csv", index=False)
    test[["Date", "Comment"]].to_csv(public / "test.csv", index=False)
    sample = test[["Insult", "Date", "Comment"]].assign(Insult=0)
    sample.to_csv(public / "sample_submission_null.csv", index=False)

    train = pd.read_csv(public / "train.csv", dtype=str, keep_default_na=False)
    assert not set(train["Comment"]) & set(test["Comment"]), "a test comment also appears in train"
    assert "Insult" not in pd.read_csv(public / "test.csv", nrows=0).columns
    assert sample["Comment"].tolist() == test["Comment"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (30 rows) and test_with_solutions.csv (20 rows, with Usage), distinct comments."""
    import pandas as pd

    words = ["you", "are", "such", "a", "great", "idiot", "thanks", "for", "this", "post", "lol", "really"]

    def frame(n: int, start: int) -> pd.DataFrame:
        comments = [f'"{" ".join(rng.choice(words, 5))} #{start + i}, ok\\n"' for i in range(n)]
        dates = [f"201206{int(rng.integers(10, 29))}1{int(rng.integers(10000, 99999))}Z" for _ in range(n)]
        dates[0] = ""
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]
        return pd.DataFrame({"Insult": labels, "Date": dates, "Comment": comments})

    frame(30, 0).to_csv(raw / "train.csv", index=False)
    test = frame(20, 1000)
    test["Usage"] = np.where(np.arange(20) % 3 == 0, "PublicTest", "PrivateTest")
    test.to_csv(raw / "test_with_solutions.csv", index=False)

"""Prepare the Toxic Comment Classification Challenge (6 binary toxicity labels).

Facts: no new split; Kaggle's own test set is used with its released labels. From the raw zips,
public gets ``train.csv`` (unchanged) and ``test.csv`` (id, comment_text), the sample submission
is Kaggle's with every label set to 0.5, and the answers are ``test_labels.csv`` (id + 6 labels,
-1 on whole rows that are not scored).
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np

CLASSES = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]


def _extract(raw: Path, name: str, dest: Path) -> None:
    """Copy ``name`` out of ``raw/<name>.zip`` byte for byte."""
    with zipfile.ZipFile(raw / f"{name}.zip") as archive, archive.open(name) as src, dest.open("wb") as out:
        shutil.copyfileobj(src, out)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Copy train/test out of the zips, the labels to private, and write the 0.5 sample."""
    import pandas as pd

    _extract(raw, "train.csv", public / "train.csv")
    _extract(raw, "test.csv", public / "test.csv")
    _extract(raw, "test_labels.csv", private / "test.csv")
    with (
        zipfile.ZipFile(raw / "sample_submission.csv.zip") as archive,
        archive.open("sample_submission.csv") as handle,
    ):
        sample = pd.read_csv(handle, dtype=str, keep_default_na=False)
    sample = sample[["id"]].assign(**dict.fromkeys(CLASSES, 0.5))
    sample.to_csv(public / "sample_submission.csv", index=False)

    train_ids = pd.read_csv(public / "train.csv", usecols=["id"], dtype=str)["id"]
    test = pd.read_csv(public / "test.csv", dtype=str, keep_default_na=False)
    answers = pd.read_csv(private / "test.csv", dtype=str, keep_default_na=False)
    assert list(test.columns) == ["id", "comment_text"], "public test must hold no labels"
    assert list(answers.columns) == ["id", *CLASSES]
    assert sorted(answers["id"]) == sorted(test["id"]) == sorted(sample["id"])
    assert not set(train_ids) & set(test["id"])


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Tiny train.csv.zip, test.csv.zip, test_labels.csv.zip and sample_submission.csv.zip."""
    import pandas as pd

    words = ["you", "are", "great", "awful", "thanks", "for", "the", "edit", "stupid", "article", "please, stop"]

    def comments(n: int) -> list[str]:
        return ['"' + " ".join(rng.choice(words, int(rng.integers(3, 9)))) + '"\n' for _ in range(n)]

    def ids(n: int) -> list[str]:
        return [f"{int(v):016x}" for v in rng.integers(0, 2**62, n)]

    train = pd.DataFrame({"id": ids(40), "comment_text": comments(40)})
    for name in CLASSES:
        train[name] = rng.integers(0, 2, 40)
    test = pd.DataFrame({"id": ids(30), "comment_text": comments(30)})
    labels = pd.DataFrame({"id": test["id"]})
    for name in CLASSES:
        labels[name] = rng.integers(0, 2, 30)
        labels.loc[:1, name] = [0, 1]  # both classes among the scored rows
    labels.loc[20:, CLASSES] = -1  # unscored rows
    sample = pd.DataFrame({"id": test["id"], **dict.fromkeys(CLASSES, 0.5)})
    tables = {"train.csv": train, "test.csv": test, "test_labels.csv": labels, "sample_submission.csv": sample}
    for name, frame in tables.items():
        with zipfile.ZipFile(raw / f"{name}.zip", "w") as archive:
            archive.writestr(name, frame.to_csv(index=False))

"""Prepare ML2021Spring-hw2 (TIMIT frame-level phoneme classification, 39 classes).

Facts: rows of ``timit_11/timit_11/train_11.npy`` (429 features) and ``train_label_11.npy`` are
split with ``train_test_split(range(n_train), test_size=n_test / (n_train + n_test),
random_state=0)``, where n_test is the length of the raw ``test_11.npy`` (only its length is
used). Public gets the new ``train_11.npy``, ``train_label_11.npy`` and ``test_11.npy`` (test
rows in split order) under ``timit_11/timit_11/``; the answers are ``[Id, ClassId]`` with Id the
row index in the new test file; the sample submission ``sampleSubmission.csv`` predicts 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FOLDER = Path("timit_11") / "timit_11"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the feature rows, save the new arrays, write answers and the sample submission."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    features = np.load(raw / FOLDER / "train_11.npy", mmap_mode="r")
    labels = np.load(raw / FOLDER / "train_label_11.npy")
    n_test_raw = len(np.load(raw / FOLDER / "test_11.npy", mmap_mode="r"))
    ratio = n_test_raw / (len(features) + n_test_raw)
    train_rows, test_rows = train_test_split(range(len(features)), test_size=ratio, random_state=0)

    out = public / FOLDER
    out.mkdir(parents=True)
    np.save(out / "train_11.npy", features[train_rows])
    np.save(out / "train_label_11.npy", labels[train_rows])
    np.save(out / "test_11.npy", features[test_rows])
    answers = pd.DataFrame({"Id": np.arange(len(test_rows)), "ClassId": labels[test_rows]})
    answers.to_csv(private / "answers.csv", index=False)
    answers.assign(ClassId=0).to_csv(public / "sampleSubmission.csv", index=False)

    assert len(features) == len(labels)
    assert len(train_rows) + len(test_rows) == len(features)
    assert not set(train_rows) & set(test_rows)
    assert len(np.load(out / "test_11.npy", mmap_mode="r")) == len(answers)
    sample_ids = pd.read_csv(public / "sampleSubmission.csv", dtype=str)["Id"]
    assert sample_ids.tolist() == pd.read_csv(private / "answers.csv", dtype=str)["Id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Tiny train/test feature arrays (float32, 429 columns) and string labels '0'..'38'."""
    folder = raw / FOLDER
    folder.mkdir(parents=True)
    np.save(folder / "train_11.npy", rng.normal(size=(60, 429)).astype(np.float32))
    np.save(folder / "train_label_11.npy", rng.integers(0, 39, 60).astype(str))
    np.save(folder / "test_11.npy", rng.normal(size=(22, 429)).astype(np.float32))

"""seti-breakthrough-listen: a 10% split of the labelled cadence snippets.

Facts implemented: ``train_test_split(train_labels.csv, test_size=0.1, random_state=0)``. Public:
``train_labels.csv`` (id, target), ``train/{id[0]}/{id}.npy`` and ``test/{id[0]}/{id}.npy`` (copied),
``old_leaky_data/`` (the organisers' withdrawn earlier dataset, copied verbatim) and
``sample_submission.csv`` (target = 0.5). Private ``test.csv``: id, target.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train_labels.csv 90/10 (seed 0), copy the arrays and old_leaky_data/."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train_labels.csv", dtype=str, keep_default_na=False)
    new_train, new_test = train_test_split(old, test_size=0.1, random_state=0)
    new_train.to_csv(public / "train_labels.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.assign(target=0.5).to_csv(public / "sample_submission.csv", index=False)
    shutil.copytree(raw / "old_leaky_data", public / "old_leaky_data")
    for folder, frame in (("train", new_train), ("test", new_test)):
        for file_id in frame["id"]:
            (public / folder / file_id[0]).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(
                raw / "train" / file_id[0] / f"{file_id}.npy", public / folder / file_id[0] / f"{file_id}.npy"
            )

    assert set(new_train["id"]).isdisjoint(new_test["id"]) and len(new_train) + len(new_test) == len(old)
    assert len(list((public / "test").rglob("*.npy"))) == len(new_test)
    assert len(list((public / "train").rglob("*.npy"))) == len(new_train)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train_labels.csv`` with 30 ids, ``train/{id[0]}/{id}.npy`` (6x4x8 float16), a small ``old_leaky_data/``."""
    import pandas as pd

    ids = ["".join(rng.choice(list("0123456789abcdef"), 15)) for _ in range(36)]
    targets = rng.integers(0, 2, 30)
    targets[:2] = [0, 1]
    pd.DataFrame({"id": ids[:30], "target": targets}).to_csv(raw / "train_labels.csv", index=False)
    for file_id in ids[:30]:
        (raw / "train" / file_id[0]).mkdir(parents=True, exist_ok=True)
        np.save(raw / "train" / file_id[0] / f"{file_id}.npy", rng.random((6, 4, 8)).astype(np.float16))
    old = raw / "old_leaky_data"
    old_ids = ["old" + i for i in ids[30:]]
    (old / "train_old").mkdir(parents=True)
    pd.DataFrame({"id": old_ids, "target": rng.integers(0, 2, 6)}).to_csv(old / "train_labels_old.csv", index=False)
    for file_id in old_ids:
        np.save(old / "train_old" / f"{file_id}.npy", rng.random((6, 4, 8)).astype(np.float16))

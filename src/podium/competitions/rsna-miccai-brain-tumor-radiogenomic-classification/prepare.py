"""rsna-miccai-brain-tumor-radiogenomic-classification: split the labelled MRI cases.

Facts implemented: train_labels.csv (585 cases; BraTS21ID read as text and zero-padded to 5 digits,
MGMT_value) is split with ``train_test_split(test_size=0.1, random_state=0)``; public holds
train_labels.csv, train/{id}/ and test/{id}/ (each case folder with its FLAIR, T1w, T1wCE and T2w
DICOMs, copied whole) and a sample submission with MGMT_value 0.5; private/test.csv holds BraTS21ID,
MGMT_value. The raw test/ folder and sample submission are not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

SEQUENCES = ("FLAIR", "T1w", "T1wCE", "T2w")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train_labels.csv", dtype={"BraTS21ID": str})
    table["BraTS21ID"] = table["BraTS21ID"].str.zfill(5)
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    train.to_csv(public / "train_labels.csv", index=False)
    test[["BraTS21ID", "MGMT_value"]].to_csv(private / "test.csv", index=False)
    test[["BraTS21ID"]].assign(MGMT_value=0.5).to_csv(public / "sample_submission.csv", index=False)
    for frame, folder in ((train, "train"), (test, "test")):
        for case in frame["BraTS21ID"]:
            shutil.copytree(raw / "train" / case, public / folder / case)

    assert not set(train["BraTS21ID"]) & set(test["BraTS21ID"])
    assert len(train) + len(test) == len(table)
    assert len(list((public / "test").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train_labels.csv with 30 unpadded case ids, one opaque .dcm per sequence folder of each case."""
    import pandas as pd

    cases = np.sort(rng.choice(1000, 30, replace=False))
    labels = np.resize([0, 1], len(cases))
    pd.DataFrame({"BraTS21ID": cases, "MGMT_value": labels}).to_csv(raw / "train_labels.csv", index=False)
    for case in cases:
        for sequence in SEQUENCES:
            folder = raw / "train" / f"{case:05d}" / sequence
            folder.mkdir(parents=True)
            (folder / "Image-1.dcm").write_bytes(b"\0" * 128 + b"DICM" + rng.bytes(32))
    (raw / "test" / "00001" / "FLAIR").mkdir(parents=True)
    pd.DataFrame({"BraTS21ID": [1], "MGMT_value": [0.5]}).to_csv(raw / "sample_submission.csv", index=False)

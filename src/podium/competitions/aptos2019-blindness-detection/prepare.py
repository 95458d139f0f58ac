"""aptos2019-blindness-detection: split the labelled fundus images into train and test.

Facts implemented: train.csv (3,662 rows) is split with ``train_test_split(test_size=0.1,
random_state=0)``; public holds train.csv, test.csv (id_code only), train_images/ and test_images/
(``{id_code}.png``) and a sample submission with diagnosis 0; private/test.csv holds
id_code, diagnosis. The raw test set and sample submission are not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv", dtype={"id_code": str})
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    test[["id_code"]].to_csv(public / "test.csv", index=False)
    test[["id_code", "diagnosis"]].to_csv(private / "test.csv", index=False)
    test[["id_code"]].assign(diagnosis=0).to_csv(public / "sample_submission.csv", index=False)
    for frame, folder in ((train, "train_images"), (test, "test_images")):
        (public / folder).mkdir()
        for id_code in frame["id_code"]:
            shutil.copyfile(raw / "train_images" / f"{id_code}.png", public / folder / f"{id_code}.png")

    assert not set(train["id_code"]) & set(test["id_code"])
    assert len(train) + len(test) == len(table)
    assert len(list((public / "test_images").iterdir())) == len(test)
    assert "diagnosis" not in pd.read_csv(public / "test.csv", nrows=1).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 40 ids and a tiny PNG per id, plus the unused raw test files."""
    import pandas as pd
    from PIL import Image

    ids = [f"{int(v):012x}" for v in rng.integers(0, 2**48, 40)]
    diagnosis = np.resize(np.arange(5), len(ids))
    pd.DataFrame({"id_code": ids, "diagnosis": diagnosis}).to_csv(raw / "train.csv", index=False)
    (raw / "train_images").mkdir()
    for id_code in ids:
        pixels = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(raw / "train_images" / f"{id_code}.png")
    pd.DataFrame({"id_code": ["0005cfc8afb6"]}).to_csv(raw / "test.csv", index=False)
    pd.DataFrame({"id_code": ["0005cfc8afb6"], "diagnosis": [0]}).to_csv(raw / "sample_submission.csv", index=False)

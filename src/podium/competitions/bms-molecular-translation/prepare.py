"""BMS Molecular Translation: split train_labels.csv 80/20 with random_state 0; images follow their id.

Facts: train_test_split(test_size=0.2, random_state=0) on train_labels.csv; public
train_labels.csv (image_id, InChI), train/ and test/ in the raw nested layout
{c0}/{c1}/{c2}/{image_id}.png, extra_approved_InChIs.csv copied, sample_submission.csv with
InChI = "InChI=1S/H2O/h1H2"; private test.csv (image_id, InChI).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

SAMPLE_INCHI = "InChI=1S/H2O/h1H2"


def _nested(image_id: str) -> Path:
    return Path(image_id[0], image_id[1], image_id[2], f"{image_id}.png")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train_labels.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(table, test_size=0.2, random_state=0)
    train.to_csv(public / "train_labels.csv", index=False)
    test[["image_id", "InChI"]].to_csv(private / "test.csv", index=False)
    sample = pd.DataFrame({"image_id": test["image_id"].to_numpy(), "InChI": SAMPLE_INCHI})
    sample.to_csv(public / "sample_submission.csv", index=False)
    shutil.copyfile(raw / "extra_approved_InChIs.csv", public / "extra_approved_InChIs.csv")
    for split, frame in (("train", train), ("test", test)):
        for image_id in frame["image_id"]:
            target = public / split / _nested(image_id)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(raw / "train" / _nested(image_id), target)

    assert not set(train["image_id"]) & set(test["image_id"])
    assert len(train) + len(test) == len(table)
    assert sample["image_id"].tolist() == test["image_id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train_labels.csv (40 rows), nested train/ PNGs, extra_approved_InChIs.csv, a stub test/."""
    import pandas as pd
    from PIL import Image

    ids = [f"{int(v):012x}" for v in rng.integers(0, 16**12, 40)]
    formulas = ["C13H20OS", "C21H30O4", "C24H23N5O4", "C17H24N2O4S", "C10H19N3O2"]
    inchis = [f"InChI=1S/{rng.choice(formulas)}/c1-{int(rng.integers(2, 20))}-3-4/h5H,1-3H3" for _ in ids]
    pd.DataFrame({"image_id": ids, "InChI": inchis}).to_csv(raw / "train_labels.csv", index=False)
    pd.DataFrame({"InChI": inchis[:5]}).to_csv(raw / "extra_approved_InChIs.csv", index=False)
    for image_id in ids:
        path = raw / "train" / _nested(image_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray((rng.random((12, 16)) > 0.2).astype(np.uint8) * 255).save(path)
    (raw / "test" / "0" / "0" / "0").mkdir(parents=True)
    pd.DataFrame({"image_id": ["000abc"], "InChI": [SAMPLE_INCHI]}).to_csv(raw / "sample_submission.csv", index=False)

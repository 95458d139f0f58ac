"""Prepare aerial-cactus-identification (facts: split, public, private, sample_submission).

train.csv (17,500 rows) is split with ``train_test_split(test_size=0.19, random_state=0)``; the
images of each side are re-zipped into public train.zip / test.zip with the files at the archive
root. Answers: private/test.csv (id, has_cactus); sample submission has_cactus = 0.5.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

TEST_SIZE = 0.19
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _image_members(archive: zipfile.ZipFile) -> dict[str, str]:
    """Image file name -> member name (Kaggle's train.zip holds train/<id>)."""
    return {Path(n).name: n for n in archive.namelist() if not n.endswith("/")}


def _write_zip(source: zipfile.ZipFile, members: dict[str, str], names: list[str], target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name in names:
            out.writestr(zipfile.ZipInfo(name, date_time=_EPOCH), source.read(members[name]))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv 81/19 and re-zip the images of each side."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(old, test_size=TEST_SIZE, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    sample = test[["id"]].assign(has_cactus=0.5)
    sample.to_csv(public / "sample_submission.csv", index=False)
    with zipfile.ZipFile(raw / "train.zip") as archive:
        members = _image_members(archive)
        _write_zip(archive, members, train["id"].tolist(), public / "train.zip")
        _write_zip(archive, members, test["id"].tolist(), public / "test.zip")

    assert set(train["id"]).isdisjoint(test["id"]) and len(train) + len(test) == len(old)
    assert sample["id"].tolist() == test["id"].tolist()
    with zipfile.ZipFile(public / "test.zip") as archive:
        assert sorted(archive.namelist()) == sorted(test["id"])


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 40 rows and train.zip holding train/<id>.jpg (32x32 images)."""
    import io

    import pandas as pd
    from PIL import Image

    ids = [f"{rng.bytes(16).hex()}.jpg" for _ in range(40)]
    labels = rng.integers(0, 2, len(ids))
    labels[:2] = [0, 1]
    pd.DataFrame({"id": ids, "has_cactus": labels}).to_csv(raw / "train.csv", index=False)
    with zipfile.ZipFile(raw / "train.zip", "w") as archive:
        for name in ids:
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(buffer, format="JPEG")
            archive.writestr(f"train/{name}", buffer.getvalue())
    (raw / "sample_submission.csv").write_text("id,has_cactus\n")

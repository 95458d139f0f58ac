"""iWildCam 2019: a split by camera location (facts: raw, split, public, private, sample_submission).

Facts implemented: the unique ``location`` values of train.csv, in order of first appearance, are
split by ``train_test_split(locations, test_size=0.1, random_state=8)``; every image of a test
location is test. Public train.csv keeps all columns, public test.csv drops category_id; the
images are read from raw train_images.zip ({id}.jpg, count asserted) and written to
train_images.zip / test_images.zip ({id}.jpg at the archive root); private answers.csv is
(Id, Category) and private test.csv the full test rows; the sample submission (Id, Category=0)
is written with its pandas index, so its header starts with an unnamed column.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np

COLUMNS = [
    "category_id",
    "date_captured",
    "file_name",
    "frame_num",
    "id",
    "location",
    "rights_holder",
    "seq_id",
    "seq_num_frames",
    "width",
    "height",
]


def _write_zip(source: zipfile.ZipFile, ids: list[str], target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for image_id in ids:
            info = source.getinfo(f"{image_id}.jpg")
            member = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            member.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(member, source.read(info))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    locations = np.asarray(old["location"].unique(), dtype=object)
    _, test_locations = train_test_split(locations, test_size=0.1, random_state=8)
    in_test = old["location"].isin(set(test_locations))
    train, answers = old[~in_test], old[in_test]
    new_test = answers.drop(columns=["category_id"])
    gold = answers[["id", "category_id"]].rename(columns={"id": "Id", "category_id": "Category"})
    sample = gold.assign(Category=0)

    train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(public / "test.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    gold.to_csv(private / "answers.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=True)
    with zipfile.ZipFile(raw / "train_images.zip") as images:
        assert len([n for n in images.namelist() if n.endswith(".jpg")]) == old["id"].nunique()
        _write_zip(images, train["id"].tolist(), public / "train_images.zip")
        _write_zip(images, new_test["id"].tolist(), public / "test_images.zip")

    assert len(train) + len(answers) == len(old)
    assert not set(train["id"]) & set(answers["id"])
    assert not set(train["location"]) & set(answers["location"])
    assert list(train.columns) == COLUMNS and "category_id" not in new_test.columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (the 11 Kaggle columns; 80 images at 20 locations) and train_images.zip of 8x8 jpgs."""
    import pandas as pd
    from PIL import Image

    n = 80
    ids = [f"{int(a):08x}-{int(b):04x}-11e8-a1a1-{int(c):012x}" for a, b, c in rng.integers(0, 2**31, (n, 3))]
    frame = pd.DataFrame(
        {
            "category_id": rng.choice([0, 1, 3, 8, 10, 11, 13, 16, 19], n),
            "date_captured": [f"2012-0{1 + i % 9}-1{i % 10} 0{i % 10}:2{i % 6}:00" for i in range(n)],
            "file_name": [f"{i}.jpg" for i in ids],
            "frame_num": np.arange(n) % 3 + 1,
            "id": ids,
            "location": rng.integers(0, 20, n) * 7 + 3,
            "rights_holder": rng.choice(["Justin Brown", "Erin Boydston"], n),
            "seq_id": [f"6f0{int(v):05x}" for v in np.arange(n) // 3],
            "seq_num_frames": 3,
            "width": 1024,
            "height": 747,
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    with zipfile.ZipFile(raw / "train_images.zip", "w") as archive:
        for image_id in ids:
            buffer = io.BytesIO()
            Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
            archive.writestr(zipfile.ZipInfo(f"{image_id}.jpg", date_time=(2019, 3, 1, 0, 0, 0)), buffer.getvalue())

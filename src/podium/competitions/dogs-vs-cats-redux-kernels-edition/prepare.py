"""Prepare dogs-vs-cats-redux-kernels-edition (facts: split, renaming, public, private).

The sorted list of train/*.jpg inside raw train.zip (25,000 images) is split with
``train_test_split(test_size=0.1, random_state=0)``. New-train files are renamed cat.{k}.jpg /
dog.{k}.jpg (separate 0-based counters, split order; "cat" in the name decides); new-test files
become {i}.jpg, i = 1..N in split order. Public holds train/ and test/ plus train.zip / test.zip
(files at the archive root); answers.csv (id, label: 1 = dog); sample label = 0.5.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

TEST_SIZE = 0.1
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _zip_folder(folder: Path, target: Path) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for path in sorted(folder.iterdir()):
            out.writestr(zipfile.ZipInfo(path.name, date_time=_EPOCH), path.read_bytes())


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the training images 90/10, rename them, and zip both sides."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "train.zip") as archive:
        members = {Path(n).name: n for n in archive.namelist() if n.endswith(".jpg")}
        images = sorted(members)
        train, test = train_test_split(images, test_size=TEST_SIZE, random_state=0)
        (public / "train").mkdir()
        (public / "test").mkdir()
        counters = {"cat": 0, "dog": 0}
        for name in train:
            kind = "cat" if "cat" in name else "dog"
            (public / "train" / f"{kind}.{counters[kind]}.jpg").write_bytes(archive.read(members[name]))
            counters[kind] += 1
        for i, name in enumerate(test, start=1):
            (public / "test" / f"{i}.jpg").write_bytes(archive.read(members[name]))
    _zip_folder(public / "train", public / "train.zip")
    _zip_folder(public / "test", public / "test.zip")
    ids = list(range(1, len(test) + 1))
    pd.DataFrame({"id": ids, "label": [int("dog" in n) for n in test]}).to_csv(private / "answers.csv", index=False)
    pd.DataFrame({"id": ids, "label": 0.5}).to_csv(public / "sample_submission.csv", index=False)

    assert not set(train) & set(test) and len(train) + len(test) == len(images)
    assert sum(counters.values()) == len(train) == len(list((public / "train").iterdir()))
    assert len(list((public / "test").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.zip with 20 cat and 20 dog jpgs under train/, test.zip with 5 under test/."""
    import io

    from PIL import Image

    def jpeg() -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)).save(buffer, format="JPEG")
        return buffer.getvalue()

    with zipfile.ZipFile(raw / "train.zip", "w") as archive:
        for kind in ("cat", "dog"):
            for i in range(20):
                archive.writestr(f"train/{kind}.{i}.jpg", jpeg())
    with zipfile.ZipFile(raw / "test.zip", "w") as archive:
        for i in range(1, 6):
            archive.writestr(f"test/{i}.jpg", jpeg())
    (raw / "sample_submission.csv").write_text("id,label\n" + "".join(f"{i},0.5\n" for i in range(1, 6)))

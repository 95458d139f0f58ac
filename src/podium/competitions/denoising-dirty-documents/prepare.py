"""denoising-dirty-documents: hold out 20% of the noisy training scans as the test set.

Facts implemented: the sorted list of ``train/*.png`` (from ``train.zip``) is split with
``train_test_split(test_size=0.2, random_state=0)``. Public: ``train/`` and ``train_cleaned/`` for the
new train images, ``test/`` (noisy new-test images) and ``sampleSubmission.csv`` (value = 1).
Private ``answers.csv``: one row per cleaned test pixel, id ``{stem}_{row}_{col}`` (1-indexed, row by
row, images in sorted file-name order), value = grey level / 255.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np

TEST_SIZE = 0.2


def _pngs(archive: zipfile.ZipFile, folder: str) -> dict[str, zipfile.ZipInfo]:
    """The archive's ``folder/*.png`` members by file name."""
    out = {}
    for info in archive.infolist():
        path = PurePosixPath(info.filename)
        if not info.is_dir() and path.suffix == ".png" and path.parent.name == folder:
            out[path.name] = info
    return out


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(info) as source, dst.open("wb") as sink:
        shutil.copyfileobj(source, sink)


def _pixels(path: Path) -> tuple[list[str], np.ndarray]:
    from PIL import Image

    with Image.open(path) as image:
        values = np.asarray(image.convert("L"), dtype=np.float64) / 255.0
    rows, cols = values.shape
    ids = [f"{path.stem}_{r + 1}_{c + 1}" for r in range(rows) for c in range(cols)]
    return ids, values.ravel()


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the sorted noisy training images, then write one answer row per cleaned test pixel."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "train.zip") as noisy_zip, zipfile.ZipFile(raw / "train_cleaned.zip") as clean_zip:
        noisy, cleaned = _pngs(noisy_zip, "train"), _pngs(clean_zip, "train_cleaned")
        names = sorted(noisy)  # sorting the paths train/<name> sorts the names
        train_names, test_names = train_test_split(names, test_size=TEST_SIZE, random_state=0)
        for name in train_names:
            _extract(noisy_zip, noisy[name], public / "train" / name)
            _extract(clean_zip, cleaned[name], public / "train_cleaned" / name)
        staging = private / "cleaned-test"
        for name in test_names:
            _extract(noisy_zip, noisy[name], public / "test" / name)
            _extract(clean_zip, cleaned[name], staging / name)
    ids: list[str] = []
    values = []
    for name in sorted(test_names):
        image_ids, pixels = _pixels(staging / name)
        ids += image_ids
        values.append(pixels)
    shutil.rmtree(staging)
    answers = pd.DataFrame({"id": ids, "value": np.concatenate(values)})
    answers.to_csv(private / "answers.csv", index=False)
    answers.assign(value=1).to_csv(public / "sampleSubmission.csv", index=False)

    assert set(train_names).isdisjoint(test_names) and len(train_names) + len(test_names) == len(names)
    assert sorted(p.name for p in (public / "test").iterdir()) == sorted(test_names)
    assert sorted(p.name for p in (public / "train_cleaned").iterdir()) == sorted(train_names)
    assert answers["id"].is_unique and answers["value"].between(0, 1).all()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.zip`` / ``train_cleaned.zip`` with ten tiny 7x5 grey PNG pairs under train/ and train_cleaned/."""
    from io import BytesIO

    from PIL import Image

    def png(array: np.ndarray) -> bytes:
        buffer = BytesIO()
        Image.fromarray(array.astype(np.uint8), mode="L").save(buffer, format="PNG")
        return buffer.getvalue()

    stamp = (2015, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(raw / "train.zip", "w") as noisy, zipfile.ZipFile(raw / "train_cleaned.zip", "w") as clean:
        for number in (2, 3, 5, 8, 12, 14, 20, 21, 26, 101):
            cleaned = np.where(rng.random((7, 5)) < 0.2, 0, 255)
            dirty = np.clip(cleaned * 0.8 + rng.integers(0, 50, (7, 5)), 0, 255)
            noisy.writestr(zipfile.ZipInfo(f"train/{number}.png", stamp), png(dirty))
            clean.writestr(zipfile.ZipInfo(f"train_cleaned/{number}.png", stamp), png(cleaned))

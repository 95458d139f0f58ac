"""Invasive Species Monitoring: split train_labels.csv 80/20 and re-pack the images as 7z archives.

Facts: raw train.7z holds train/{name}.jpg and train_labels.csv.zip holds train_labels.csv (name,
invasive); raw test.7z and sample_submission.csv.zip are ignored. train_labels.csv, read in file
order, is split by train_test_split(test_size=0.2, random_state=0). Private: answers.csv (name,
invasive) and sample_submission.csv (invasive = 0.5). Public: train_labels.csv.zip,
sample_submission.csv.zip, train.7z and test.7z (images named {name}.jpg).

Version 1 reproduces the published archives, which are written with py7zr's single-entry
``write()`` on each image folder and so hold one directory entry (the folder's absolute path minus
its leading slash) and no image. Version 2 writes the images: train.7z holds train/{name}.jpg and
test.7z holds test/{name}.jpg.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

TEST_SIZE = 0.2


def _zip_one(path: Path, name: str, data: bytes) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def _extract_train(raw: Path) -> Path:
    """raw/train/ (extracted from raw/train.7z once, through a temporary folder)."""
    import py7zr

    images = raw / "train"
    if not images.is_dir():
        staging = raw / f".train.7z.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        with py7zr.SevenZipFile(raw / "train.7z") as archive:
            archive.extractall(staging)
        os.replace(staging / "train", images)
        shutil.rmtree(staging)
    return images


def _pack(archive: Path, folder: str, images: list[Path], *, with_images: bool) -> None:
    """Version 2: {folder}/{file} for every image, stored uncompressed (JPEGs do not shrink).
    Version 1: what the published write() of the folder produced, a lone directory entry. There it is
    named after the folder's absolute path on the preparing machine; here after the folder alone, with a
    fixed time, so that preparing twice gives the same bytes."""
    import py7zr

    if with_images:
        with py7zr.SevenZipFile(archive, "w", filters=[{"id": py7zr.FILTER_COPY}]) as handle:
            for image in images:
                handle.write(image, arcname=f"{folder}/{image.name}")
        return
    empty = archive.parent.resolve() / folder
    empty.mkdir()
    os.utime(empty, (0, 0))
    with py7zr.SevenZipFile(archive, "w") as handle:
        handle.write(empty, arcname=folder)
    empty.rmdir()


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the labelled images 80/20 (random_state=0); see the module docstring for the files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    labels = pd.read_csv(raw / "train_labels.csv.zip")
    images = _extract_train(raw)
    train, answers = train_test_split(labels, test_size=TEST_SIZE, random_state=0)
    sample = answers.assign(invasive=0.5)

    answers.to_csv(private / "answers.csv", index=False)
    sample.to_csv(private / "sample_submission.csv", index=False)
    _zip_one(public / "train_labels.csv.zip", "train_labels.csv", train.to_csv(index=False).encode())
    _zip_one(public / "sample_submission.csv.zip", "sample_submission.csv", sample.to_csv(index=False).encode())
    for folder, part in (("train", train), ("test", answers)):
        files = [images / f"{name}.jpg" for name in part["name"]]
        missing = [f for f in files if not f.is_file()]
        if missing:
            raise FileNotFoundError(2, "image listed in train_labels.csv is missing", str(missing[0]))
        _pack(public / f"{folder}.7z", folder, files, with_images=version >= 2)

    assert train["name"].is_unique and answers["name"].is_unique
    assert not set(train["name"]) & set(answers["name"])
    assert len(train) + len(answers) == len(labels)
    assert list(sample["name"]) == list(answers["name"])
    assert sorted(p.name for p in public.iterdir()) == [
        "sample_submission.csv.zip",
        "test.7z",
        "train.7z",
        "train_labels.csv.zip",
    ]


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.7z (train/1.jpg .. train/40.jpg), train_labels.csv.zip, test.7z (test/1.jpg .. 6.jpg)
    and sample_submission.csv.zip, all with tiny 8x8 JPEGs; both classes land in the 20% test part."""
    import py7zr
    from PIL import Image
    from sklearn.model_selection import train_test_split

    def jpeg() -> io.BytesIO:
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(buffer, format="JPEG")
        buffer.seek(0)
        return buffer

    n_train, n_test = 40, 6
    invasive = rng.integers(0, 2, n_train)
    _, test_rows = train_test_split(np.arange(n_train), test_size=TEST_SIZE, random_state=0)
    invasive[test_rows[:2]] = [0, 1]
    labels = "name,invasive\n" + "".join(f"{i + 1},{v}\n" for i, v in enumerate(invasive))
    _zip_one(raw / "train_labels.csv.zip", "train_labels.csv", labels.encode())
    sample = "name,invasive\n" + "".join(f"{i},0.5\n" for i in range(1, n_test + 1))
    _zip_one(raw / "sample_submission.csv.zip", "sample_submission.csv", sample.encode())
    for folder, n in (("train", n_train), ("test", n_test)):
        with py7zr.SevenZipFile(raw / f"{folder}.7z", "w") as archive:
            for i in range(1, n + 1):
                archive.writef(jpeg(), f"{folder}/{i}.jpg")

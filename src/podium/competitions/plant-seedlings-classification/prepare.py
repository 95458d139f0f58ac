"""Prepare Plant Seedlings Classification (12 species, images in per-species folders).

Facts: a (file, species) table is built from ``raw/train/{species}/{file}.png``, species folders
and file names each sorted; it is split with ``train_test_split(test_size=0.14,
random_state=0)``. Public gets ``train/{species}/{file}`` and a flat ``test/{file}``; the
answers are ``[file, species]``; the sample submission predicts "Sugar beet". Raw test/ and
sample_submission.csv are ignored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

SPECIES = [
    "Black-grass",
    "Charlock",
    "Cleavers",
    "Common Chickweed",
    "Common wheat",
    "Fat Hen",
    "Loose Silky-bent",
    "Maize",
    "Scentless Mayweed",
    "Shepherds Purse",
    "Small-flowered Cranesbill",
    "Sugar beet",
]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the labelled images, copy them, write answers and the sample submission."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    source = raw / "train"
    rows = [
        {"file": image.name, "species": folder.name}
        for folder in sorted((p for p in source.iterdir() if p.is_dir()), key=lambda p: p.name)
        for image in sorted((f for f in folder.iterdir() if f.name.endswith(".png")), key=lambda f: f.name)
    ]
    old = pd.DataFrame(rows)
    train, test = train_test_split(old, test_size=0.14, random_state=0)

    for file, species in zip(train["file"], train["species"], strict=True):
        (public / "train" / species).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / species / file, public / "train" / species / file)
    (public / "test").mkdir()
    for file, species in zip(test["file"], test["species"], strict=True):
        shutil.copyfile(source / species / file, public / "test" / file)
    test.to_csv(private / "answers.csv", index=False)
    test.assign(species="Sugar beet").to_csv(public / "sample_submission.csv", index=False)

    assert old["file"].is_unique, "image file names must be unique across species"
    assert len(train) + len(test) == len(old)
    assert not set(train["file"]) & set(test["file"])
    assert len(list(public.glob("train/*/*.png"))) == len(train)
    assert len(list(public.glob("test/*.png"))) == len(test)
    sample_ids = pd.read_csv(public / "sample_submission.csv", dtype=str)["file"]
    assert sample_ids.tolist() == pd.read_csv(private / "answers.csv", dtype=str)["file"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Four tiny PNGs per species under train/{species}/, plus a small test/ folder."""
    from PIL import Image

    def png(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(path)

    for species in SPECIES:
        for _ in range(4):
            png(raw / "train" / species / f"{int(rng.integers(16**8, 16**9)):09x}.png")
    for _ in range(3):
        png(raw / "test" / f"{int(rng.integers(16**8, 16**9)):09x}.png")

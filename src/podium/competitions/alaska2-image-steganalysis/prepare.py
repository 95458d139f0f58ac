"""Prepare ALASKA2 Image Steganalysis (cover vs. stego JPEG detection).

Facts: the sorted list of ``raw/Cover/*.jpg`` is split with ``train_test_split(test_size=5000,
random_state=42)``. Train covers are renamed 00001.jpg, 00002.jpg, ... in split order, with the
same new name for the matching JMiPOD/JUNIWARD/UERD images. The test covers are shuffled with a
``random.seed(0)`` stream; for each (named 0001.jpg, ...) ``random.choice([True, False])`` keeps
the cover (Label 0) or else ``random.choice([JMiPOD, JUNIWARD, UERD])`` picks the stego version
(Label 1). Raw Test/ and sample_submission.csv are ignored; the sample submission predicts 0.

The test set has ``TEST_SIZE`` covers; a raw folder with fewer than ``2 * TEST_SIZE`` covers
(only the tiny generated fixture; the real one has 75,000) uses a fifth of them instead.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 5000
ALGORITHMS = ["JMiPOD", "JUNIWARD", "UERD"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the covers, copy train images renamed, build the mixed test set and its labels."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    covers = sorted((raw / "Cover").glob("*.jpg"))
    test_size = TEST_SIZE if len(covers) >= 2 * TEST_SIZE else len(covers) // 5
    train, test = train_test_split(covers, test_size=test_size, random_state=42)

    for folder in ["Cover", "Test", *ALGORITHMS]:
        (public / folder).mkdir()
    for i, cover in enumerate(train, start=1):
        shutil.copyfile(cover, public / "Cover" / f"{i:05d}.jpg")
        for algorithm in ALGORITHMS:
            shutil.copyfile(raw / algorithm / cover.name, public / algorithm / f"{i:05d}.jpg")

    stream = random.Random(0)  # the same draws as random.seed(0) followed by module-level calls
    stream.shuffle(test)
    rows = []
    for i, cover in enumerate(test, start=1):
        name = f"{i:04d}.jpg"
        if stream.choice([True, False]):
            shutil.copyfile(cover, public / "Test" / name)
            rows.append((name, 0))
        else:
            shutil.copyfile(raw / stream.choice(ALGORITHMS) / cover.name, public / "Test" / name)
            rows.append((name, 1))
    answers = pd.DataFrame(rows, columns=["Id", "Label"])
    answers.to_csv(private / "test.csv", index=False)
    answers.assign(Label=0).to_csv(public / "sample_submission.csv", index=False)

    assert len(train) + len(test) == len(covers) and not set(train) & set(test)
    assert len(answers) == test_size == len(list((public / "Test").glob("*.jpg")))
    sample_ids = pd.read_csv(public / "sample_submission.csv", dtype=str)["Id"]
    assert sample_ids.tolist() == pd.read_csv(private / "test.csv", dtype=str)["Id"].tolist()
    for folder in ["Cover", *ALGORITHMS]:
        assert len(list((public / folder).glob("*.jpg"))) == len(train)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """30 tiny 8x8 JPEG covers and a perturbed copy of each in JMiPOD/, JUNIWARD/, UERD/."""
    from PIL import Image

    for folder in ["Cover", *ALGORITHMS, "Test"]:
        (raw / folder).mkdir()
    for i in range(1, 31):
        pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(raw / "Cover" / f"{i:05d}.jpg", quality=95)
        for k, algorithm in enumerate(ALGORITHMS, start=1):
            stego = np.clip(pixels.astype(int) + k * rng.integers(-1, 2, pixels.shape), 0, 255).astype(np.uint8)
            Image.fromarray(stego).save(raw / algorithm / f"{i:05d}.jpg", quality=95)
    Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(raw / "Test" / "0001.jpg")

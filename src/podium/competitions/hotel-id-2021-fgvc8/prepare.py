"""Hotel-ID 2021: a 10% split of train.csv, test images flattened (facts: raw filtering, split, public).

Facts implemented: rows with image == "ce27d36c9147cc19.jpg" (listed twice) are dropped, then
``train_test_split(test_size=0.1, random_state=0)``; public train.csv (image, chain, hotel_id,
timestamp) and train_images/{chain}/{image}; test images copied flat into test_images/{image}
(chain hidden); private test.csv keeps all four columns; the sample submission is
``image, hotel_id="36363 53586 18807 64314 60181"``.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np

DUPLICATE = "ce27d36c9147cc19.jpg"
DEFAULT = "36363 53586 18807 64314 60181"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str)
    old = old[old["image"] != DUPLICATE]
    train, test = train_test_split(old, test_size=0.1, random_state=0)

    train.to_csv(public / "train.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    test[["image"]].assign(hotel_id=DEFAULT).to_csv(public / "sample_submission.csv", index=False)
    for image, chain in zip(train["image"], train["chain"], strict=True):
        (public / "train_images" / chain).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / "train_images" / chain / image, public / "train_images" / chain / image)
    (public / "test_images").mkdir()
    for image, chain in zip(test["image"], test["chain"], strict=True):
        shutil.copyfile(raw / "train_images" / chain / image, public / "test_images" / image)

    assert len(train) + len(test) == len(old)
    assert not set(train["image"]) & set(test["image"])
    assert list(test.columns) == ["image", "chain", "hotel_id", "timestamp"]
    assert len(list((public / "test_images").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (60 photos over 4 chains, plus the duplicated image twice) and train_images/{chain}/{image}."""
    import pandas as pd
    from PIL import Image

    n = 60
    images = [f"{int(v):016x}.jpg" for v in rng.choice(2**60, n, replace=False)]
    hotels = rng.choice([36363, 53586, 18807, 64314, 60181, 1234, 99001, 4520], n)
    frame = pd.DataFrame(
        {
            "image": [*images, DUPLICATE, DUPLICATE],
            "chain": [*(hotels % 4), 0, 3],
            "hotel_id": [*hotels, 1234, 1234],
            "timestamp": [f"2018-0{1 + int(m)}-1{int(d)} 10:2{int(d)}:05" for m, d in rng.integers(0, 9, (n + 2, 2))],
        }
    )
    frame.to_csv(raw / "train.csv", index=False)
    for image, chain in zip(frame["image"], frame["chain"], strict=True):
        (raw / "train_images" / str(chain)).mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
        (raw / "train_images" / str(chain) / image).write_bytes(buffer.getvalue())

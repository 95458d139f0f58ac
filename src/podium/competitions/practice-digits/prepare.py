"""Practice: handwritten digits as images (10 classes), from scikit-learn's bundled digits.

Facts: raw/digits.csv is the table ``load_digits`` ships (64 columns pixel_<row>_<col> with gray
levels 0..16, ``target`` the digit). Rows get ids 1..N from a permutation seeded 0 (the shipped
order cycles 0, 1, ..., 9, so an index would give the label away); train_test_split(test_size=0.2,
random_state=0) splits them. Public: images/{id}.png for every row (8x8, mode L, level * 255 / 16
rounded), train.csv (id, label), test.csv (id); private test.csv holds id and label; the sample
submission predicts 0 everywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RAW = "digits.csv"
TEST_SIZE = 0.2


def fetch_raw(raw: Path) -> None:
    from sklearn.datasets import load_digits

    frame = load_digits(as_frame=True).frame.astype(int)
    frame.to_csv(raw / RAW, index=False)


def _png(pixels: np.ndarray, path: Path) -> None:
    from PIL import Image

    levels = np.rint(pixels.reshape(8, 8).astype(float) * 255 / 16).astype(np.uint8)
    Image.fromarray(levels).save(path, format="PNG")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import split_practice

    table = pd.read_csv(raw / RAW).rename(columns={"target": "label"})
    pixels = [c for c in table.columns if c.startswith("pixel_")]
    assert len(pixels) == 64, f"expected 64 pixel columns, got {len(pixels)}"
    _, test = split_practice(
        table, public, private, target="label", test_size=TEST_SIZE, sample={"label": 0}, public_columns=["id"]
    )
    images = public / "images"
    images.mkdir()
    for image_id, row in zip(table["id"], table[pixels].to_numpy(), strict=True):
        _png(row, images / f"{image_id}.png")
    assert set(test["label"]) <= set(range(10))
    assert len(list(images.iterdir())) == len(table)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """digits.csv: 6 real images of each digit, in the shipped layout."""
    from sklearn.datasets import load_digits

    frame = load_digits(as_frame=True).frame.astype(int)
    rows = np.concatenate([rng.choice(np.flatnonzero(frame["target"] == k), 6, replace=False) for k in range(10)])
    frame.iloc[np.sort(rows)].to_csv(raw / RAW, index=False)

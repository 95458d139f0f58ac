"""Contrails: split train_metadata.json's records; the test set is as large as the validation set.

Facts: train_test_split(train records, test_size=len(validation_metadata), random_state=0).
Public: train/{record_id}/ (bands 08-16 and both mask files), test/{record_id}/ (bands only),
validation/ and validation_metadata.json unchanged, train_metadata.json (new train records),
sample_submission.csv (random.seed(0); per row "1 3 10 5" or "-"); private answers.csv
(record_id, encoded_pixels, height, width): column-major 1-indexed RLE of human_pixel_masks.npy,
"-" when empty; height and width from band_08.npy's shape.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np

BANDS = tuple(f"band_{b:02d}.npy" for b in range(8, 17))
MASKS = ("human_pixel_masks.npy", "human_individual_masks.npy")


def _rle(mask: np.ndarray) -> str:
    pixels = np.concatenate([[0], mask.flatten(order="F").astype(np.int8), [0]])
    edges = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    return " ".join(f"{s} {e - s}" for s, e in zip(edges[0::2], edges[1::2], strict=True)) or "-"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    records: list[dict[str, Any]] = json.loads((raw / "train_metadata.json").read_text(encoding="utf-8"))
    validation: list[dict[str, Any]] = json.loads((raw / "validation_metadata.json").read_text(encoding="utf-8"))
    train, test = train_test_split(records, test_size=len(validation), random_state=0)
    (public / "train_metadata.json").write_text(json.dumps(train), encoding="utf-8")
    shutil.copyfile(raw / "validation_metadata.json", public / "validation_metadata.json")
    shutil.copytree(raw / "validation", public / "validation")

    rows = []
    for split, items, files in (("train", train, BANDS + MASKS), ("test", test, BANDS)):
        for record in items:
            rid = str(record["record_id"])
            (public / split / rid).mkdir(parents=True)
            for name in files:
                shutil.copyfile(raw / "train" / rid / name, public / split / rid / name)
            if split == "test":
                height, width = np.load(raw / "train" / rid / "band_08.npy", mmap_mode="r").shape[:2]
                mask = np.load(raw / "train" / rid / "human_pixel_masks.npy").reshape(height, width)
                rows.append((rid, _rle(mask != 0), height, width))
    answers = pd.DataFrame(rows, columns=["record_id", "encoded_pixels", "height", "width"])
    answers.to_csv(private / "answers.csv", index=False)
    random.seed(0)
    sample = answers.assign(encoded_pixels=[random.choice(["1 3 10 5", "-"]) for _ in rows])
    sample.to_csv(public / "sample_submission.csv", index=False)

    train_ids = {str(r["record_id"]) for r in train}
    assert not train_ids & set(answers["record_id"])
    assert len(train) + len(test) == len(records) and len(test) == len(validation)
    assert all(not (public / "test" / rid / m).exists() for rid in answers["record_id"] for m in MASKS)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """20 train and 4 validation records of 8x8x2 float16 bands with 8x8x1 masks, plus metadata."""

    def write(split: str, n: int) -> None:
        records = []
        for _ in range(n):
            rid = str(int(rng.integers(10**18, 9 * 10**18)))
            folder = raw / split / rid
            folder.mkdir(parents=True)
            for name in BANDS:
                np.save(folder / name, rng.uniform(200, 300, (8, 8, 2)).astype(np.float16))
            mask = np.zeros((8, 8, 1), dtype=np.int32)
            if rng.random() < 0.7:
                mask[int(rng.integers(0, 6)), 1:6, 0] = 1
            np.save(folder / "human_pixel_masks.npy", mask)
            np.save(folder / "human_individual_masks.npy", mask[..., None])
            records.append(
                {
                    "record_id": rid,
                    "projection_wkt": "PROJCS[...]",
                    "row_min": 0.5,
                    "row_size": 2.0,
                    "col_min": 0.5,
                    "col_size": 2.0,
                    "timestamp": 1.5e9,
                }
            )
        (raw / f"{split}_metadata.json").write_text(json.dumps(records), encoding="utf-8")

    write("train", 20)
    write("validation", 4)
    (raw / "test" / "1000834164244036115").mkdir(parents=True)

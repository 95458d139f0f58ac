"""TGS Salt: split competition_data/train.csv 75/25 with random_state 0; images follow their id.

Facts: train.csv (id, rle_mask; empty masks read as "") from competition_data.zip is split by
train_test_split(test_size=0.25, random_state=0). Public: train.csv sorted by id,
train/images + train/masks for train ids, test/images for test ids, depths.csv filtered to train
ids and sorted by id, sample_submission.csv (rle_mask = "1 1"); private test.csv (id, rle_mask)
sorted by id.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

ROOT = "competition_data"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "competition_data.zip") as archive:
        with archive.open(f"{ROOT}/train.csv") as handle:
            table = pd.read_csv(handle, dtype=str, keep_default_na=False)
        train, test = train_test_split(table, test_size=0.25, random_state=0)
        train, test = train.sort_values("id"), test.sort_values("id")
        wanted = {
            f"{ROOT}/train/{kind}/{i}.png": f"train/{kind}/{i}.png" for i in train["id"] for kind in ("images", "masks")
        }
        wanted |= {f"{ROOT}/train/images/{i}.png": f"test/images/{i}.png" for i in test["id"]}
        for member, target in wanted.items():
            (public / target).parent.mkdir(parents=True, exist_ok=True)
            (public / target).write_bytes(archive.read(member))
    train.to_csv(public / "train.csv", index=False)
    test[["id", "rle_mask"]].to_csv(private / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"].to_numpy(), "rle_mask": "1 1"})
    sample.to_csv(public / "sample_submission.csv", index=False)
    depths = pd.read_csv(raw / "depths.csv", dtype=str, keep_default_na=False)
    depths = depths[depths["id"].isin(set(train["id"]))].sort_values("id")
    depths.to_csv(public / "depths.csv", index=False)

    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(table)
    assert sample["id"].tolist() == test["id"].tolist()
    assert not set(depths["id"]) & set(test["id"])


def _rle(mask: np.ndarray) -> str:
    pixels = np.concatenate([[0], mask.flatten(order="F").astype(np.int8), [0]])
    edges = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    return " ".join(f"{s} {e - s}" for s, e in zip(edges[0::2], edges[1::2], strict=True))


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """competition_data.zip (train.csv with 40 ids, 101x101 image/mask PNGs, a test/ image) and depths.csv."""
    import io

    import pandas as pd
    from PIL import Image

    def png(array: np.ndarray) -> bytes:
        buffer = io.BytesIO()
        Image.fromarray(array).save(buffer, format="PNG")
        return buffer.getvalue()

    ids = [f"{int(v):010x}" for v in rng.integers(0, 16**10, 40)]
    rows = []
    with zipfile.ZipFile(raw / "competition_data.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for i, image_id in enumerate(ids):
            mask = np.zeros((101, 101), dtype=bool)
            if i % 3:
                top, left = rng.integers(0, 80, 2)
                mask[top : top + int(rng.integers(5, 40)), left : left + int(rng.integers(5, 40))] = True
            image = np.full((101, 101), int(rng.integers(60, 200)), dtype=np.uint8)
            archive.writestr(f"{ROOT}/train/images/{image_id}.png", png(image))
            archive.writestr(f"{ROOT}/train/masks/{image_id}.png", png(mask.astype(np.uint8) * 255))
            rows.append((image_id, _rle(mask)))
        archive.writestr(f"{ROOT}/test/images/ffffffffff.png", png(np.zeros((101, 101), dtype=np.uint8)))
        archive.writestr(f"{ROOT}/train.csv", pd.DataFrame(rows, columns=["id", "rle_mask"]).to_csv(index=False))
    depths = pd.DataFrame({"id": [*ids, "ffffffffff"], "z": rng.integers(50, 960, len(ids) + 1)})
    depths.to_csv(raw / "depths.csv", index=False)

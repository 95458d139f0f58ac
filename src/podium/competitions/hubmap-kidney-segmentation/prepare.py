"""Prepare hubmap-kidney-segmentation (facts: split, public, private, known_issues).

train.csv (15 images) is split with ``train_test_split(train_size=12, test_size=3,
random_state=0)``. Public: train.csv, HuBMAP-20-dataset_information.csv filtered to the 15 train
images, train/ and test/ with {id}.tiff, {id}.json, {id}-anatomical-structure.json, a copy of the
sample submission in test/. Private: test.csv (id, encoding, width_pixels, height_pixels) and
gold_submission.csv. Version 1 keeps the test/{id}.json glomerulus polygons (they leak the
answers, upstream PR #98); version 2 leaves them out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

TRAIN_SIZE, TEST_SIZE = 12, 3
INFO = "HuBMAP-20-dataset_information.csv"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the 15 images 12/3; version >= 2 drops the leaking test polygon files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    info = pd.read_csv(raw / INFO, dtype=str, keep_default_na=False)
    train, test = train_test_split(old, train_size=TRAIN_SIZE, test_size=TEST_SIZE, random_state=0)
    image_ids = info["image_file"].str.replace(".tiff", "", regex=False)
    info = info[image_ids.isin(old["id"])]
    sizes = info.assign(id=image_ids)[["id", "width_pixels", "height_pixels"]]
    test = test.merge(sizes, on="id")
    info.to_csv(public / INFO, index=False)
    train.to_csv(public / "train.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    sample = test[["id"]].assign(predicted="")
    sample.to_csv(public / "sample_submission.csv", index=False)
    test[["id"]].assign(predicted=test["encoding"]).to_csv(private / "gold_submission.csv", index=False)

    for frame, folder in ((train, "train"), (test, "test")):
        (public / folder).mkdir()
        for image_id in frame["id"]:
            suffixes = [".tiff", "-anatomical-structure.json"]
            if folder == "train" or version < 2:
                suffixes.append(".json")
            for suffix in suffixes:
                shutil.copyfile(raw / "train" / f"{image_id}{suffix}", public / folder / f"{image_id}{suffix}")
    shutil.copyfile(public / "sample_submission.csv", public / "test" / "sample_submission.csv")

    assert set(train["id"]).isdisjoint(test["id"]) and len(train) + len(test) == len(old) == len(info)
    assert test.columns.tolist() == ["id", "encoding", "width_pixels", "height_pixels"]
    assert sample["id"].tolist() == test["id"].tolist()
    assert len(list((public / "test").glob("*.tiff"))) == len(test)
    assert version < 2 or not [p for p in (public / "test").glob("*.json") if "anatomical" not in p.name]


def _rle(mask: np.ndarray) -> str:
    """Column-major, 1-indexed 'start length' pairs."""
    flat = np.concatenate([[0], mask.flatten(order="F").astype(np.int8), [0]])
    runs = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    return " ".join(f"{s} {e - s}" for s, e in zip(runs[0::2], runs[1::2], strict=True))


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """15 train images (tiny tiffs + polygon jsons) with RLE masks, and dataset info for 20 images."""
    import pandas as pd
    from PIL import Image

    (raw / "train").mkdir()
    (raw / "test").mkdir()
    rows, info, test_ids = [], [], []
    for i in range(20):
        image_id = f"{rng.bytes(5).hex()[:9]}"
        height, width = int(rng.integers(12, 40)), int(rng.integers(12, 40))
        info.append(
            {
                "image_file": f"{image_id}.tiff",
                "width_pixels": width,
                "height_pixels": height,
                "anatomical_structures_segmention_file": f"{image_id}-anatomical-structure.json",
                "glomerulus_segmentation_file": f"{image_id}.json",
                "patient_number": 67000 + i,
                "race": "White",
                "ethnicity": "Not Hispanic or Latino",
                "sex": "Male" if i % 2 else "Female",
                "age": 40 + i,
                "weight_kilograms": 80.0,
                "height_centimeters": 175.0,
                "bmi_kg/m^2": 26.1,
                "laterality": "Left",
                "percent_cortex": 80,
                "percent_medulla": 20,
            }
        )
        folder = raw / ("train" if i < 15 else "test")
        Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(folder / f"{image_id}.tiff")
        mask = np.zeros((height, width), dtype=bool)
        y, x = int(rng.integers(0, height - 4)), int(rng.integers(0, width - 4))
        mask[y : y + 4, x : x + 4] = True
        polygon = [[x, y], [x + 4, y], [x + 4, y + 4], [x, y + 4], [x, y]]
        feature = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [polygon]}, "properties": {}}
        (folder / f"{image_id}.json").write_text(json.dumps([feature]))
        cortex = [[0, 0], [width, 0], [width, height], [0, height], [0, 0]]  # the tissue region, not a glomerulus
        region = {"type": "Feature", "id": "cortex", "geometry": {"type": "Polygon", "coordinates": [cortex]}}
        (folder / f"{image_id}-anatomical-structure.json").write_text(json.dumps([region]))
        if i < 15:
            rows.append({"id": image_id, "encoding": _rle(mask)})
        else:
            test_ids.append(image_id)
    pd.DataFrame(rows).to_csv(raw / "train.csv", index=False)
    pd.DataFrame(info).to_csv(raw / INFO, index=False)
    pd.DataFrame({"id": test_ids, "predicted": ""}).to_csv(raw / "sample_submission.csv", index=False)

"""Prepare Herbarium 2021 - FGVC8 (herbarium sheet -> species, ~64.5k categories).

Facts (the same algorithm as herbarium-2020-fgvc7): ``train/metadata.json`` pairs
``annotations[i]`` with ``images[i]``; items are grouped by category_id in order of first
appearance. A category with one item stays in train; with 2-4 items its last
``max(1, int(0.2 * n))`` items (file order) go to test; otherwise
``train_test_split(items, test_size=0.2, random_state=0)``. Train keeps the original ids and
file names (metadata lists items category by category). Test items, concatenated category by
category, are shuffled with ``random.Random(0)``; item idx gets id ``str(idx)`` and file name
``images/{idx // 1000:03d}/{idx}.jpg``. Public test/metadata.json holds images, info and licenses
only; the answers are ``[Id, Predicted]`` (category id); the sample submission predicts 0.
Raw test/ is ignored.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np

Item = dict[str, dict[str, Any]]


def _split(items: list[Item]) -> tuple[list[Item], list[Item]]:
    from sklearn.model_selection import train_test_split

    n = len(items)
    if n == 1:
        return items, []
    if n < 5:
        k = max(1, int(n * 0.2))
        return items[:-k], items[-k:]
    train, test = train_test_split(items, test_size=0.2, random_state=0)
    return list(train), list(test)


def _dump(data: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        json.dump(data, handle, indent=4, sort_keys=True)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split per category, copy images, write both metadata files, answers and the sample."""
    import pandas as pd

    with (raw / "train" / "metadata.json").open(encoding="utf-8") as handle:
        old = json.load(handle)
    by_category: dict[int, list[Item]] = {}
    for annotation, image in zip(old["annotations"], old["images"], strict=True):
        assert annotation["image_id"] == image["id"]
        by_category.setdefault(annotation["category_id"], []).append({"annotation": annotation, "image": image})

    train_items: list[Item] = []
    test_items: list[Item] = []
    for items in by_category.values():
        train, test = _split(items)
        train_items += train
        test_items += test

    for item in train_items:
        dest = public / "train" / item["image"]["file_name"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / "train" / item["image"]["file_name"], dest)
    new_train = {
        **old,
        "annotations": [item["annotation"] for item in train_items],
        "images": [item["image"] for item in train_items],
    }
    _dump(new_train, public / "train" / "metadata.json")

    random.Random(0).shuffle(test_items)
    images, rows = [], []
    for idx, item in enumerate(test_items):
        file_name = f"images/{idx // 1000:03d}/{idx}.jpg"
        dest = public / "test" / file_name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / "train" / item["image"]["file_name"], dest)
        images.append({**item["image"], "id": str(idx), "file_name": file_name})
        rows.append((str(idx), item["annotation"]["category_id"]))
    _dump({"images": images, "info": old["info"], "licenses": old["licenses"]}, public / "test" / "metadata.json")
    answers = pd.DataFrame(rows, columns=["Id", "Predicted"])
    answers.to_csv(private / "answers.csv", index=False)
    answers.assign(Predicted=0).to_csv(public / "sample_submission.csv", index=False)

    train_ids = {item["image"]["id"] for item in train_items}
    assert not train_ids & {item["image"]["id"] for item in test_items}
    assert len(train_items) + len(test_items) == len(old["images"])
    assert len(list((public / "test" / "images").rglob("*.jpg"))) == len(answers)
    assert len(list((public / "train" / "images").rglob("*.jpg"))) == len(train_items)
    sample_ids = pd.read_csv(public / "sample_submission.csv", dtype=str)["Id"]
    assert sample_ids.tolist() == pd.read_csv(private / "answers.csv", dtype=str)["Id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """A tiny train/metadata.json (8 categories of 1..8 images) and 8x8 JPEGs in the real layout."""
    from PIL import Image

    annotations, images = [], []
    image_id = 1000
    for category_id in rng.permutation(8).tolist():
        for _ in range(category_id + 1):
            image_id += int(rng.integers(1, 5))
            file_name = f"images/{category_id // 100:03d}/{category_id % 100:02d}/{image_id}.jpg"
            path = raw / "train" / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).save(path)
            institution = int(rng.integers(0, 3))
            annotations.append(
                {"category_id": category_id, "id": image_id, "image_id": image_id, "institution_id": institution}
            )
            images.append({"file_name": file_name, "height": 8, "id": image_id, "license": 0, "width": 8})
    order = rng.permutation(len(images)).tolist()  # the real file is not sorted by category
    metadata = {
        "annotations": [annotations[i] for i in order],
        "categories": [
            {"family": "Asteraceae", "id": c, "name": f"Species {c}", "order": "Asterales"} for c in range(8)
        ],
        "images": [images[i] for i in order],
        "info": {"contributor": "herbaria", "description": "tiny fixture", "version": "1.0", "year": 2021},
        "institutions": [{"id": i, "name": f"Herbarium {i}"} for i in range(3)],
        "licenses": [{"id": 0, "name": "Public Domain Dedication", "url": "https://example.org/license"}],
    }
    (raw / "train" / "metadata.json").write_text(json.dumps(metadata), encoding="utf-8")

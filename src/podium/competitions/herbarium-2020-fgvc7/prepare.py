"""Prepare herbarium-2020-fgvc7 (facts: split, test_renaming, public, private).

nybg2020/train/metadata.json (read as latin-1) pairs annotations[i] with images[i]; the pairs are
grouped by category_id (first-appearance order). A category with 1 sample stays in train; with
2-4 samples its last max(1, int(0.2 n)) samples go to test; with >= 5,
``train_test_split(items, test_size=0.2, random_state=0)``. The test items, concatenated in
category order, are shuffled with ``random.Random(0)`` and renamed: id = str(position), file_name
= images/{idx // 1000:03d}/{idx}.jpg. Public: train metadata (new train annotations and images,
other keys unchanged) with its images at their original paths, test metadata (images, info,
licenses) with renamed images. Answers: answers.csv (Id, Predicted = category_id); sample
Predicted = 0.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np

TEST_SIZE = 0.2


def _split(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from sklearn.model_selection import train_test_split

    n = len(items)
    if n == 1:
        return items, []
    if n < 5:
        k = max(1, int(n * TEST_SIZE))
        return items[:-k], items[-k:]
    train, test = train_test_split(items, test_size=TEST_SIZE, random_state=0)
    return list(train), list(test)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split per category, rename the shuffled test images, write both metadata files."""
    import pandas as pd

    source = raw / "nybg2020" / "train"
    old = json.loads((source / "metadata.json").read_text(encoding="latin-1"))
    by_category: dict[Any, list[dict[str, Any]]] = {}
    for annotation, image in zip(old["annotations"], old["images"], strict=True):
        assert annotation["image_id"] == image["id"]
        by_category.setdefault(annotation["category_id"], []).append({"annotation": annotation, "image": image})
    train_items: list[dict[str, Any]] = []
    test_items: list[dict[str, Any]] = []
    for items in by_category.values():
        train, test = _split(items)
        train_items += train
        test_items += test
    random.Random(0).shuffle(test_items)

    out_train, out_test = public / "nybg2020" / "train", public / "nybg2020" / "test"
    new_train = {
        **old,
        "annotations": [t["annotation"] for t in train_items],
        "images": [t["image"] for t in train_items],
    }
    for item in train_items:
        target = out_train / item["image"]["file_name"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / item["image"]["file_name"], target)
    (out_train / "metadata.json").write_text(json.dumps(new_train, indent=4, sort_keys=True))

    test_images, answers = [], []
    for idx, item in enumerate(test_items):
        file_name = f"images/{idx // 1000:03d}/{idx}.jpg"
        test_images.append({**item["image"], "id": str(idx), "file_name": file_name})
        answers.append((str(idx), item["annotation"]["category_id"]))
        (out_test / file_name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / item["image"]["file_name"], out_test / file_name)
    public_test = {"images": test_images, "info": old["info"], "licenses": old["licenses"]}
    (out_test / "metadata.json").write_text(json.dumps(public_test, indent=4, sort_keys=True))
    frame = pd.DataFrame(answers, columns=["Id", "Predicted"])
    frame.to_csv(private / "answers.csv", index=False)
    sample = frame.assign(Predicted=0)
    sample.to_csv(public / "sample_submission.csv", index=False)

    assert len(train_items) + len(test_items) == len(old["annotations"])
    assert {t["image"]["id"] for t in train_items}.isdisjoint(t["image"]["id"] for t in test_items)
    assert len(list((out_test / "images").rglob("*.jpg"))) == len(frame) == len(sample)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """metadata.json (latin-1) with 26 images in 7 categories of 1, 3 and 6 samples, and their jpgs."""
    from PIL import Image

    source = raw / "nybg2020" / "train"
    (raw / "nybg2020" / "test" / "images").mkdir(parents=True)
    sizes = {15504: 6, 3: 1, 2107: 3, 871: 6, 23001: 1, 412: 3, 9: 6}
    categories = [
        {"family": "Orchidaceae", "genus": "Aa", "id": c, "name": f"Aa species {c} Rchb.f. & Warsz. Ã©"} for c in sizes
    ]
    pairs = [(c, k) for c, n in sizes.items() for k in range(n)]
    order = rng.permutation(len(pairs))
    images, annotations = [], []
    for j, i in enumerate(order):
        category = pairs[i][0]
        image_id = 100000 + j
        file_name = f"images/{category // 100:03d}/{category % 100:02d}/{image_id}.jpg"
        images.append({"file_name": file_name, "height": 10, "id": image_id, "license": 0, "width": 7})
        annotations.append({"category_id": category, "id": image_id, "image_id": image_id, "region_id": 1})
        (source / file_name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 255, (10, 7), dtype=np.uint8)).save(source / file_name)
    metadata = {
        "annotations": annotations,
        "categories": categories,
        "images": images,
        "info": {"contributor": "herbarium", "year": 2020},
        "licenses": [{"id": 0, "name": "Public Domain Dedication", "url": "http://example.org"}],
        "regions": [{"id": 1, "name": "Andes"}],
    }
    (source / "metadata.json").write_text(json.dumps(metadata, ensure_ascii=False), encoding="latin-1")

"""herbarium-2022-fgvc9: split every category's herbarium sheets 80/20.

Facts implemented: train_metadata.json's annotations and images (paired by position, same image_id)
are grouped by category in order of first appearance; each category's items are split with
``train_test_split(test_size=0.2, random_state=0)`` (both sides non-empty). Train items are renamed
image_id = "{category_id:05d}__{k:03d}" (k counts from 1 within the category's train list) and
file_name = "{category_id//100:03d}/{category_id%100:02d}/{image_id}.jpg"; public/train_metadata.json
keeps every other key (categories, genera, distances, licenses, institutions). Test items, concatenated
by category, are shuffled with ``random.Random(0)`` and renamed image_id = str(idx), file_name =
"{idx//1000:03d}/test-{idx:06d}.jpg"; public/test_metadata.json is a plain list of their image
records. private/answers.csv holds Id (= idx) and Predicted (the category id); the sample submission
predicts 42. The raw test images and test_metadata.json are not used.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np


def _by_category(metadata: dict[str, Any]) -> dict[int, list[tuple[dict[str, Any], dict[str, Any]]]]:
    groups: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for annotation, image in zip(metadata["annotations"], metadata["images"], strict=True):
        assert annotation["image_id"] == image["image_id"], (annotation, image)
        groups.setdefault(int(annotation["category_id"]), []).append((annotation, image))
    return groups


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    metadata = json.loads((raw / "train_metadata.json").read_text())
    train_annotations, train_images, test_items = [], [], []
    copies: list[tuple[str, str]] = []
    for category, items in _by_category(metadata).items():
        train_items, category_test = train_test_split(items, test_size=0.2, random_state=0)
        assert train_items and category_test, category
        for k, (annotation, image) in enumerate(train_items, start=1):
            image_id = f"{category:05d}__{k:03d}"
            file_name = f"{category // 100:03d}/{category % 100:02d}/{image_id}.jpg"
            train_annotations.append({**annotation, "image_id": image_id})
            train_images.append({**image, "image_id": image_id, "file_name": file_name})
            copies.append((image["file_name"], f"train_images/{file_name}"))
        test_items.extend(category_test)
    random.Random(0).shuffle(test_items)
    test_images, answers = [], []
    for idx, (annotation, image) in enumerate(test_items):
        file_name = f"{idx // 1000:03d}/test-{idx:06d}.jpg"
        test_images.append({**image, "image_id": str(idx), "file_name": file_name})
        answers.append((idx, int(annotation["category_id"])))
        copies.append((image["file_name"], f"test_images/{file_name}"))
    new_train = {**metadata, "annotations": train_annotations, "images": train_images}
    (public / "train_metadata.json").write_text(json.dumps(new_train))
    (public / "test_metadata.json").write_text(json.dumps(test_images))
    frame = pd.DataFrame(answers, columns=["Id", "Predicted"])
    frame.to_csv(private / "answers.csv", index=False)
    frame[["Id"]].assign(Predicted=42).to_csv(public / "sample_submission.csv", index=False)
    for source, target in copies:
        (public / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / "train_images" / source, public / target)

    assert len(train_images) + len(test_images) == len(metadata["images"])
    assert len({i["file_name"] for i in train_images} | {i["file_name"] for i in test_images}) == len(copies)
    assert all("category_id" not in image for image in test_images)
    assert frame["Id"].is_unique


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train_metadata.json with 8 categories of 2-5 sheets each, a tiny JPEG per sheet, an unused test file."""
    from PIL import Image

    categories = sorted(int(c) for c in rng.choice(15500, 8, replace=False))
    annotations, images = [], []
    for category in categories:
        for k in range(1, int(rng.integers(2, 6)) + 1):
            image_id = f"{category:05d}__{k:03d}"
            file_name = f"{category // 100:03d}/{category % 100:02d}/{image_id}.jpg"
            genus = category // 10
            annotations.append(
                {"genus_id": genus, "institution_id": k % 3, "category_id": category, "image_id": image_id}
            )
            images.append({"image_id": image_id, "file_name": file_name, "license": 0})
            path = raw / "train_images" / file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (8, 6, 3), dtype=np.uint8)).save(path)
    metadata = {
        "annotations": annotations,
        "categories": [
            {
                "category_id": c,
                "scientific_name": f"Genus{c // 10} species{c}",
                "family": "Asteraceae",
                "genus": f"Genus{c // 10}",
                "species": f"species{c}",
                "authors": "L.",
            }
            for c in categories
        ],
        "genera": [{"genus_id": g, "genus": f"Genus{g}"} for g in sorted({c // 10 for c in categories})],
        "distances": [{"genus_id_x": categories[0] // 10, "genus_id_y": categories[1] // 10, "distance": 0.5}],
        "images": images,
        "licenses": [{"id": 0, "name": "CC BY-NC-ND 4.0", "url": "https://creativecommons.org/licenses/by-nc-nd/4.0/"}],
        "institutions": [{"institution_id": i, "collectionCode": f"INST{i}"} for i in range(3)],
    }
    (raw / "train_metadata.json").write_text(json.dumps(metadata))
    (raw / "test_metadata.json").write_text(
        json.dumps([{"file_name": "000/test-000000.jpg", "image_id": "0", "license": 0}])
    )

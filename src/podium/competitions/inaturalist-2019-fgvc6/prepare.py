"""inaturalist-2019-fgvc6: a per-category 12% split of the 2019 training images.

Facts implemented: images of ``train2019.json`` are grouped by category (in order of first
appearance); a category with 1 image stays in train, one with 2-4 images sends its last
``max(1, int(0.12 n))`` to test, and a larger one is split with ``train_test_split(test_size=0.12,
random_state=0)``. The test items, concatenated by category, are shuffled with ``random.Random(0)``;
image ids are kept and test file names become ``test2019/<basename>``. ``val2019.json`` is copied.
Public: ``train2019.json`` / ``test2019.json`` (json indent 4, sorted keys; test without
annotations and categories), ``val2019.json``, ``train_val2019.tar.gz`` (new-train images, paths
without the ``train_val2019/`` prefix) and ``test2019.tar.gz`` (test images at the root), both plain
uncompressed tars, and ``kaggle_sample_submission.csv`` (one ``random.Random(42).randint(0, 1009)``
value on every row). Private ``answers.csv``: id, predicted (category id).
"""

from __future__ import annotations

import json
import random
import shutil
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

TEST_SIZE = 0.12


def _split(items: list[Any]) -> tuple[list[Any], list[Any]]:
    from sklearn.model_selection import train_test_split

    if len(items) == 1:
        return items, []
    if len(items) < 5:
        k = max(1, int(len(items) * TEST_SIZE))
        return items[:-k], items[-k:]
    train, test = train_test_split(items, test_size=TEST_SIZE, random_state=0)
    return list(train), list(test)


def _dump(data: dict[str, Any], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=4, sort_keys=True)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split per category, write the json files and answers, then re-tar the images in one pass."""
    import pandas as pd

    old = json.loads((raw / "train2019.json").read_text(encoding="utf-8"))
    by_category: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for annotation, image in zip(old["annotations"], old["images"], strict=True):
        assert annotation["image_id"] == image["id"], "annotations and images are not aligned"
        by_category.setdefault(annotation["category_id"], []).append((annotation, image))
    train: list[tuple[dict[str, Any], dict[str, Any]]] = []
    test: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for items in by_category.values():
        train_items, test_items = _split(items)
        train += train_items
        test += test_items
    random.Random(0).shuffle(test)

    _dump({**old, "annotations": [a for a, _ in train], "images": [i for _, i in train]}, public / "train2019.json")
    shutil.copyfile(raw / "val2019.json", public / "val2019.json")
    test_images = [{**i, "file_name": "test2019/" + i["file_name"].split("/")[-1]} for _, i in test]
    _dump({"images": test_images, "info": old["info"], "licenses": old["licenses"]}, public / "test2019.json")
    answers = pd.DataFrame({"id": [i["id"] for _, i in test], "predicted": [a["category_id"] for a, _ in test]})
    answers.to_csv(private / "answers.csv", index=False)
    answers.assign(predicted=[random.Random(42).randint(0, 1009) for _ in range(len(answers))]).to_csv(
        public / "kaggle_sample_submission.csv", index=False
    )

    destination = {i["file_name"]: i["file_name"].split("/", 1)[1] for _, i in train}
    destination |= {i["file_name"]: i["file_name"].split("/")[-1] for _, i in test}
    test_names = {i["file_name"] for _, i in test}
    written = {"train": 0, "test": 0}
    with (
        tarfile.open(raw / "train_val2019.tar.gz", "r:*") as source,
        tarfile.open(public / "train_val2019.tar.gz", "w") as train_tar,
        tarfile.open(public / "test2019.tar.gz", "w") as test_tar,
    ):
        for member in source:
            name = member.name.removeprefix("./")
            if not member.isfile() or name not in destination:
                continue
            side = "test" if name in test_names else "train"
            handle = source.extractfile(member)
            member.name = destination[name]
            (test_tar if side == "test" else train_tar).addfile(member, handle)
            written[side] += 1

    assert len(train) + len(test) == len(old["images"]) and len(test) > 0
    assert {i["id"] for _, i in train}.isdisjoint(answers["id"]), "an image is in both train and test"
    assert written == {"train": len(train), "test": len(test)}, f"images missing from the archive: {written}"


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """A gzipped ``train_val2019.tar.gz`` of 22 tiny JPEGs in 5 categories (sizes 1, 3, 6, 6, 6), the two json files."""
    from io import BytesIO

    from PIL import Image

    sizes = {0: 6, 1: 1, 2: 6, 3: 3, 4: 6}
    kingdoms = {0: "Plants", 1: "Fungi", 2: "Plants", 3: "Insects", 4: "Birds"}
    images, annotations = [], []
    with tarfile.open(raw / "train_val2019.tar.gz", "w:gz") as archive:
        for image_id in range(22):
            category = int(rng.choice([c for c, n in sizes.items() if n > 0]))
            sizes[category] -= 1
            digest = "".join(rng.choice(list("0123456789abcdef"), 32))
            file_name = f"train_val2019/{kingdoms[category]}/{category + 400}/{digest}.jpg"
            buffer = BytesIO()
            Image.fromarray(rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)).save(buffer, format="JPEG")
            info = tarfile.TarInfo(file_name)
            info.size, info.mtime = len(buffer.getvalue()), 1_550_000_000
            buffer.seek(0)
            archive.addfile(info, buffer)
            images.append({"id": image_id, "file_name": file_name, "width": 6, "height": 6, "license": 0})
            annotations.append({"id": image_id, "image_id": image_id, "category_id": category + 400})
    categories = [{"id": c + 400, "name": f"{c + 400}", "kingdom": kingdoms[c]} for c in sorted(kingdoms)]
    meta = {"info": {"year": 2019, "version": "1.0"}, "licenses": [{"id": 0, "name": "CC BY"}]}
    train = {**meta, "images": images, "annotations": annotations, "categories": categories}
    (raw / "train2019.json").write_text(json.dumps(train), encoding="utf-8")
    val = {**meta, "images": images[:2], "annotations": annotations[:2], "categories": categories}
    (raw / "val2019.json").write_text(json.dumps(val), encoding="utf-8")

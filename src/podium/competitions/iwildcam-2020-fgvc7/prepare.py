"""Prepare iwildcam-2020-fgvc7 (facts: split, public, private, sample_submission).

Group split by camera location: ``train_test_split(unique locations, test_size=0.22,
random_state=0)``, then, while n_test / (n_all_images + n_test) < 0.22, the last train location
moves to test, and while that ratio > 0.22 the last test location moves back (the ratio's
denominator counts all original images, as published). Public: the train annotations json (new
train annotations and images, original categories and info), the test information json (new test
images, categories and info of the original test json), the megadetector results (unchanged),
train/ and test/ images. Answers: answers.csv (Id, Category); sample Category =
``np.random.seed(0); randint(0, 676)`` per row.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

TEST_SIZE = 0.22
TRAIN_JSON = "iwildcam2020_train_annotations.json"
TEST_JSON = "iwildcam2020_test_information.json"
MEGADETECTOR = "iwildcam2020_megadetector_results.json"


def _split_locations(images: list[dict[str, Any]]) -> tuple[set[Any], set[Any]]:
    from sklearn.model_selection import train_test_split

    locations = np.asarray(list(dict.fromkeys(im["location"] for im in images)), dtype=object)
    train, test = train_test_split(locations, test_size=TEST_SIZE, random_state=0)
    per_location: dict[Any, int] = {}
    for im in images:
        per_location[im["location"]] = per_location.get(im["location"], 0) + 1

    def ratio() -> float:
        n_test = sum(per_location[loc] for loc in test)
        return n_test / (len(images) + n_test)

    while ratio() < TEST_SIZE:
        test, train = np.append(test, train[-1]), train[:-1]
    while ratio() > TEST_SIZE:
        train, test = np.append(train, test[-1]), test[:-1]
    return set(train.tolist()), set(test.tolist())


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split images by location, write the two jsons, answers, sample submission and images."""
    import pandas as pd

    old = json.loads((raw / TRAIN_JSON).read_text())
    old_test = json.loads((raw / TEST_JSON).read_text())
    train_locations, test_locations = _split_locations(old["images"])
    train_images = [im for im in old["images"] if im["location"] in train_locations]
    test_images = [im for im in old["images"] if im["location"] in test_locations]
    train_ids, test_ids = {im["id"] for im in train_images}, {im["id"] for im in test_images}
    train_annotations = [a for a in old["annotations"] if a["image_id"] in train_ids]
    test_annotations = [a for a in old["annotations"] if a["image_id"] in test_ids]
    new_train = {"annotations": train_annotations, "images": train_images, "categories": old["categories"]}
    new_train["info"] = old["info"]
    new_test = {"images": test_images, "categories": old_test["categories"], "info": old_test["info"]}
    (public / TRAIN_JSON).write_text(json.dumps(new_train))
    (public / TEST_JSON).write_text(json.dumps(new_test))
    shutil.copyfile(raw / MEGADETECTOR, public / MEGADETECTOR)

    answers = pd.DataFrame(
        {"Id": [a["image_id"] for a in test_annotations], "Category": [a["category_id"] for a in test_annotations]}
    )
    answers.to_csv(private / "answers.csv", index=False)
    sample = answers.assign(Category=np.random.RandomState(0).randint(0, 676, size=len(answers)))
    sample.to_csv(public / "sample_submission.csv", index=False)
    for images, folder in ((train_images, "train"), (test_images, "test")):
        (public / folder).mkdir()
        for image_id in dict.fromkeys(im["id"] for im in images):
            shutil.copyfile(raw / "train" / f"{image_id}.jpg", public / folder / f"{image_id}.jpg")

    assert train_locations.isdisjoint(test_locations) and train_ids.isdisjoint(test_ids)
    assert len(train_ids) + len(test_ids) == len({im["id"] for im in old["images"]})
    assert {a["image_id"] for a in train_annotations}.isdisjoint(test_ids)
    assert new_train.keys() == old.keys() and new_test.keys() == old_test.keys()
    assert set(answers["Id"]) == test_ids and sample["Id"].tolist() == answers["Id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """50 images at 10 camera locations (one annotation each), the two jsons, megadetector results, jpgs."""
    from PIL import Image

    (raw / "train").mkdir()
    (raw / "test").mkdir()
    categories = [
        {"id": i, "name": name, "count": 0}
        for i, name in enumerate(["empty", "tayassu pecari", "dasyprocta punctata", "meleagris ocellata"])
    ]
    images, annotations = [], []
    for i in range(50):
        image_id = f"{rng.bytes(4).hex()}-21bc-11ea-a13a-137349068a90"
        location = int(rng.choice([3, 10, 12, 20, 37, 40, 51, 77, 90, 101]))
        images.append(
            {
                "seq_num_frames": 1,
                "location": location,
                "datetime": "2013-06-05 05:44:19.000",
                "id": image_id,
                "frame_num": 1,
                "seq_id": f"30048d32-{i:04d}",
                "width": 16,
                "height": 12,
                "file_name": f"{image_id}.jpg",
            }
        )
        annotations.append(
            {"count": 1, "image_id": image_id, "id": f"a{i:04d}", "category_id": int(rng.integers(0, 4))}
        )
        Image.fromarray(rng.integers(0, 255, (12, 16), dtype=np.uint8)).save(raw / "train" / f"{image_id}.jpg")
    info = {"version": "3.0", "description": "camera trap images"}
    train = {"annotations": annotations, "images": images, "categories": categories, "info": info}
    (raw / TRAIN_JSON).write_text(json.dumps(train))
    (raw / TEST_JSON).write_text(json.dumps({"images": [], "categories": categories, "info": {**info, "test": True}}))
    detections = [{"detections": [], "id": im["id"], "max_detection_conf": 0.0} for im in images]
    (raw / MEGADETECTOR).write_text(
        json.dumps({"info": {}, "detection_categories": {"1": "animal"}, "images": detections})
    )
    (raw / "sample_submission.csv").write_text("Id,Category\n")

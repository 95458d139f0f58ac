"""SIIM COVID-19: split train_study_level.csv 90/10 with random_state 0; images follow their study.

Facts: train_test_split(train_study_level rows, test_size=0.1, random_state=0); both sides and
the image-level rows (assigned by StudyInstanceUID) sorted by id. Public: train_study_level.csv,
train_image_level.csv (train studies), train/{study}/ and test/{study}/ copied whole,
sample_submission.csv ("negative 1 0 0 1 1" per study row, "none 1 0 0 1 1" per image row);
private test.csv (id, PredictionString): study rows "{argmax label} 1 0 0 1 1", image rows the raw
image-level label string.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

STUDY_COLUMNS = ("Negative for Pneumonia", "Typical Appearance", "Indeterminate Appearance", "Atypical Appearance")
STUDY_LABELS = ("negative", "typical", "indeterminate", "atypical")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    studies = pd.read_csv(raw / "train_study_level.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(studies, test_size=0.1, random_state=0)
    train, test = train.sort_values("id"), test.sort_values("id")
    train.to_csv(public / "train_study_level.csv", index=False)
    images = pd.read_csv(raw / "train_image_level.csv", dtype=str, keep_default_na=False)
    study_of = images["StudyInstanceUID"] + "_study"
    train_images = images[study_of.isin(set(train["id"]))].sort_values("id")
    test_images = images[study_of.isin(set(test["id"]))].sort_values("id")
    train_images.to_csv(public / "train_image_level.csv", index=False)
    for split, frame in (("train", train), ("test", test)):
        for study in frame["id"].str.replace("_study", ""):
            shutil.copytree(raw / "train" / study, public / split / study)

    labels = [STUDY_LABELS[int(np.argmax(r))] for r in test[list(STUDY_COLUMNS)].to_numpy(dtype=float)]
    ids = [*test["id"], *test_images["id"]]
    answers = pd.DataFrame(
        {"id": ids, "PredictionString": [f"{x} 1 0 0 1 1" for x in labels] + list(test_images["label"])}
    )
    answers.to_csv(private / "test.csv", index=False)
    defaults = ["negative 1 0 0 1 1"] * len(test) + ["none 1 0 0 1 1"] * len(test_images)
    pd.DataFrame({"id": ids, "PredictionString": defaults}).to_csv(public / "sample_submission.csv", index=False)

    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(studies)
    assert len(train_images) + len(test_images) == len(images), "an image belongs to no listed study"
    assert len(list((public / "test").iterdir())) == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """30 studies with 1-2 images each (opaque .dcm bytes under study/series/image), both CSVs."""
    import pandas as pd

    study_rows, image_rows = [], []
    for s in range(30):
        study = f"{int(rng.integers(16**12)):012x}"
        hot = [0, 0, 0, 0]
        hot[s % 4] = 1
        study_rows.append((f"{study}_study", *hot))
        series = f"{int(rng.integers(16**12)):012x}"
        for _ in range(int(rng.integers(1, 3))):
            image = f"{int(rng.integers(16**12)):012x}"
            if s % 4 == 0:
                boxes, label = "", "none 1 0 0 1 1"
            else:
                x, y, w, h = (round(float(v), 5) for v in rng.uniform(100, 900, 4))
                boxes = str([{"x": x, "y": y, "width": w, "height": h}])
                label = f"opacity 1 {x} {y} {round(x + w, 5)} {round(y + h, 5)}"
            image_rows.append((f"{image}_image", boxes, label, study))
            path = raw / "train" / study / series / f"{image}.dcm"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"\x00" * 128 + b"DICM" + rng.bytes(64))
    pd.DataFrame(study_rows, columns=["id", *STUDY_COLUMNS]).to_csv(raw / "train_study_level.csv", index=False)
    pd.DataFrame(image_rows, columns=["id", "boxes", "label", "StudyInstanceUID"]).to_csv(
        raw / "train_image_level.csv", index=False
    )

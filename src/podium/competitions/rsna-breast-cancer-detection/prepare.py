"""Prepare RSNA Screening Mammography Breast Cancer Detection (cancer per patient-breast).

Facts: the unique ``patient_id`` values of raw ``train.csv`` (order of first appearance) are
split with ``train_test_split(test_size=0.1, random_state=42)``. Public train.csv holds the train
patients' rows (14 columns, file order); public test.csv holds the test patients' rows with
site_id, patient_id, image_id, laterality, view, age, implant, machine_id and
prediction_id = "{patient_id}_{laterality}". The answers are ``[prediction_id, cancer]``, one
row per patient-breast (sorted, first label kept); the sample submission predicts the new train
set's mean cancer rate. Images ``train_images/{patient_id}/{image_id}.dcm`` are copied to
``train_images/`` or ``test_images/``. Raw test.csv, test_images/ and sample_submission.csv are
ignored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_COLUMNS = ["site_id", "patient_id", "image_id", "laterality", "view", "age", "implant", "machine_id"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split by patient, write train/test tables, per-breast answers, the sample and the images."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    patients = np.asarray(old["patient_id"].unique(), dtype=object)  # order of first appearance
    _, test_patients = train_test_split(patients, test_size=0.1, random_state=42)
    in_test = old["patient_id"].isin(set(test_patients))
    train, test = old[~in_test], old[in_test]

    test_public = test[TEST_COLUMNS].assign(prediction_id=test["patient_id"] + "_" + test["laterality"])
    answers = (
        test_public[["prediction_id"]].assign(cancer=test["cancer"]).groupby("prediction_id").first().reset_index()
    )
    train.to_csv(public / "train.csv", index=False)
    test_public.to_csv(public / "test.csv", index=False)
    answers.to_csv(private / "answers.csv", index=False)
    answers.assign(cancer=train["cancer"].astype(int).mean()).to_csv(public / "sample_submission.csv", index=False)

    for side, frame in (("train_images", train), ("test_images", test)):
        for patient_id, image_id in zip(frame["patient_id"], frame["image_id"], strict=True):
            (public / side / patient_id).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(
                raw / "train_images" / patient_id / f"{image_id}.dcm", public / side / patient_id / f"{image_id}.dcm"
            )

    assert len(train) + len(test) == len(old)
    assert not set(train["patient_id"]) & set(test["patient_id"])
    assert set(answers["prediction_id"]) == set(test_public["prediction_id"])
    assert len(list((public / "train_images").rglob("*.dcm"))) == len(train)
    assert len(list((public / "test_images").rglob("*.dcm"))) == len(test)
    sample_ids = pd.read_csv(public / "sample_submission.csv", dtype=str)["prediction_id"]
    assert sample_ids.tolist() == pd.read_csv(private / "answers.csv", dtype=str)["prediction_id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """30 patients with 2-4 images each: train.csv and opaque .dcm files under train_images/."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    rows = []
    image_id = 1000
    _, test_positions = train_test_split(range(30), test_size=0.1, random_state=42)
    for position, patient in enumerate(rng.choice(np.arange(10000, 65000), 30, replace=False).tolist()):
        site, machine, age = int(rng.integers(1, 3)), int(rng.choice([21, 29, 49, 93])), float(rng.integers(40, 80))
        for laterality in ("L", "R"):
            # a positive breast on the first test patient, so the tiny test set has both classes
            cancer = int(rng.random() < 0.2 or (position == test_positions[0] and laterality == "L"))
            for view in ("CC", "MLO")[: int(rng.integers(1, 3))]:
                image_id += int(rng.integers(1, 10_000))
                rows.append(
                    {
                        "site_id": site,
                        "patient_id": patient,
                        "image_id": image_id,
                        "laterality": laterality,
                        "view": view,
                        "age": age,
                        "cancer": cancer,
                        "biopsy": cancer,
                        "invasive": cancer * int(rng.integers(0, 2)),
                        "BIRADS": "" if cancer else str(rng.integers(0, 3)),
                        "implant": 0,
                        "density": str(rng.choice(["", "A", "B", "C", "D"])),
                        "machine_id": machine,
                        "difficult_negative_case": bool(rng.random() < 0.1),
                    }
                )
                path = raw / "train_images" / str(patient) / f"{image_id}.dcm"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"\0" * 128 + b"DICM" + rng.bytes(64))
    pd.DataFrame(rows).to_csv(raw / "train.csv", index=False)

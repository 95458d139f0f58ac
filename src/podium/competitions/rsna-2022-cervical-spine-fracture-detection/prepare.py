"""Prepare rsna-2022-cervical-spine-fracture-detection (facts: split, public, private).

The split is inverted: the new train keeps round(0.1 * n) studies, the test set the rest. With
``rng = random.Random(0)`` and the subsets' sizes preserved: bbox studies (sorted unique ids of
train_bounding_boxes.csv), segmentation studies (sorted .nii stems) and their overlap, the train
ids are, in order, rng.sample(overlap, round(0.1 * |overlap|)), rng.sample(segmentation-only,
round(0.1 * |seg|) - that), rng.sample(bbox-only, round(0.1 * |bbox|) - that), then rng.sample of
the other train.csv ids (file order) up to round(0.1 * n). Answers are melted (pandas melt):
StudyInstanceUID, prediction_type, fractured, row_id = "{uid}_{prediction_type}".
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np

TRAIN_RATIO = 0.1
LABELS = ["patient_overall", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Pick the 10% train studies as the facts describe; the other studies become the test set."""
    import pandas as pd

    rng = random.Random(0)
    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    boxes = pd.read_csv(raw / "train_bounding_boxes.csv", dtype=str, keep_default_na=False)
    bbox_ids = sorted(boxes["StudyInstanceUID"].unique())
    seg_ids = sorted(p.stem for p in (raw / "segmentations").glob("*.nii"))
    overlap = [uid for uid in bbox_ids if uid in seg_ids]
    n_overlap = round(len(overlap) * TRAIN_RATIO)
    picked_overlap = rng.sample(overlap, n_overlap)
    picked_seg = rng.sample([u for u in seg_ids if u not in overlap], round(len(seg_ids) * TRAIN_RATIO) - n_overlap)
    picked_bbox = rng.sample([u for u in bbox_ids if u not in overlap], round(len(bbox_ids) * TRAIN_RATIO) - n_overlap)
    train_ids = picked_overlap + picked_seg + picked_bbox
    rest = [uid for uid in old["StudyInstanceUID"] if uid not in train_ids]
    train_ids += rng.sample(rest, round(len(old) * TRAIN_RATIO) - len(train_ids))
    segmentation_ids = picked_overlap + picked_seg

    in_train = old["StudyInstanceUID"].isin(train_ids)
    train = old[in_train]
    train.to_csv(public / "train.csv", index=False)
    boxes[boxes["StudyInstanceUID"].isin(picked_overlap + picked_bbox)].to_csv(
        public / "train_bounding_boxes.csv", index=False
    )
    answers = old[~in_train].melt(id_vars="StudyInstanceUID", var_name="prediction_type", value_name="fractured")
    answers["row_id"] = answers["StudyInstanceUID"] + "_" + answers["prediction_type"]
    answers.to_csv(private / "answers.csv", index=False)
    sample = answers[["row_id"]].assign(fractured=0.5)
    sample.to_csv(public / "sample_submission.csv", index=False)
    test = answers.drop(columns=["fractured"])
    test.to_csv(public / "test.csv", index=False)

    (public / "segmentations").mkdir()
    for uid in segmentation_ids:
        shutil.copyfile(raw / "segmentations" / f"{uid}.nii", public / "segmentations" / f"{uid}.nii")
    for frame, folder in ((train, "train_images"), (test.drop_duplicates("StudyInstanceUID"), "test_images")):
        (public / folder).mkdir()
        for uid in frame["StudyInstanceUID"]:
            shutil.copytree(raw / "train_images" / uid, public / folder / uid)

    assert old.columns.tolist() == ["StudyInstanceUID", *LABELS]
    assert answers.columns.tolist() == ["StudyInstanceUID", "prediction_type", "fractured", "row_id"]
    assert answers["StudyInstanceUID"].nunique() * len(LABELS) == len(answers)
    assert len(train) == len(train_ids) and len(train) + answers["StudyInstanceUID"].nunique() == len(old)
    assert set(train["StudyInstanceUID"]).isdisjoint(test["StudyInstanceUID"])
    assert sample["row_id"].tolist() == answers["row_id"].tolist() == test["row_id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """60 studies: 20 with boxes, 15 with segmentations (10 in both); one opaque .dcm per study."""
    import pandas as pd

    uids = [f"1.2.826.0.1.3680043.{int(u)}" for u in rng.choice(np.arange(1000, 32000), 60, replace=False)]
    fractures = rng.integers(0, 2, (60, 7)) * (np.arange(60) % 3 != 0)[:, None]
    train = pd.DataFrame(fractures, columns=LABELS[1:])
    train.insert(0, "patient_overall", fractures.any(axis=1).astype(int))
    train.insert(0, "StudyInstanceUID", uids)
    train.to_csv(raw / "train.csv", index=False)
    box_studies = uids[:20]
    rows = [(uid, 50.5, 60.25, 30.0, 20.0, s) for uid in box_studies for s in range(int(rng.integers(1, 3)))]
    pd.DataFrame(rows, columns=["StudyInstanceUID", "x", "y", "width", "height", "slice_number"]).to_csv(
        raw / "train_bounding_boxes.csv", index=False
    )
    (raw / "segmentations").mkdir()
    for uid in uids[10:25]:
        (raw / "segmentations" / f"{uid}.nii").write_bytes(b"\x5c\x01\x00\x00" + rng.bytes(60))
    for uid in uids:
        folder = raw / "train_images" / uid
        folder.mkdir(parents=True)
        (folder / "1.dcm").write_bytes(b"\x00" * 128 + b"DICM" + rng.bytes(32))
    (raw / "test_images").mkdir()
    (raw / "test.csv").write_text("row_id,StudyInstanceUID,prediction_type\n")
    (raw / "sample_submission.csv").write_text("row_id,fractured\n")

"""Answers in VinBigData's long format (one row per image and class), read as one box string per image."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records, read_csv

CLASS_NAMES = (
    "Aortic enlargement",
    "Atelectasis",
    "Calcification",
    "Cardiomegaly",
    "Consolidation",
    "ILD",
    "Infiltration",
    "Lung Opacity",
    "Nodule/Mass",
    "Other lesion",
    "Pleural effusion",
    "Pleural thickening",
    "Pneumothorax",
    "Pulmonary fibrosis",
    "No finding",
)
LONG_COLUMNS = ["image_id", "class_id", "class_name", "rad_id", "x_min", "y_min", "x_max", "y_max"]


def load_answers(path: Path) -> Frame:
    long = read_csv(path, what="answers")
    boxes: dict[str, list[str]] = {}
    columns = (long[c] for c in ("image_id", "class_id", "x_min", "y_min", "x_max", "y_max"))
    for image, cls, *corners in zip(*columns, strict=True):
        boxes.setdefault(image, []).append(" ".join([cls, "1", *(c or "0" for c in corners)]))
    return frame_from_records(["image_id", "PredictionString"], ((k, " ".join(v)) for k, v in boxes.items()))


def write_answers(frame: Frame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(LONG_COLUMNS)
        for image, boxes in zip(frame["image_id"], frame["PredictionString"], strict=True):
            tokens = boxes.split()
            for i in range(0, len(tokens), 6):
                cls, _, *corners = tokens[i : i + 6]
                writer.writerow([image, cls, CLASS_NAMES[int(cls)], "R9", *corners])


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    rows = []
    for i in range(n):
        if i % 3 == 0:
            cell = "14 1 0 0 1 1"
        else:
            classes = rng.choice(14, int(rng.integers(1, 4)), replace=False)
            x1, y1 = rng.uniform(0, 900, (2, len(classes))).round(1)
            w, h = rng.uniform(20, 400, (2, len(classes))).round(1)
            parts = zip(classes, x1, y1, x1 + w, y1 + h, strict=True)
            cell = " ".join(f"{c} 1 {a:.1f} {b:.1f} {a2:.1f} {b2:.1f}" for c, a, b, a2, b2 in parts)
        rows.append((f"{i:04d}a1b2c3d4e5f6", cell))
    return frame_from_records(["image_id", "PredictionString"], rows)

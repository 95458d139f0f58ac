"""uw-madison-gi-tract-image-segmentation: split the MRI slices by case, plus late days.

Facts implemented: the cases of train.csv (in order of appearance) are split with
``train_test_split(test_size=0.1, random_state=42)``; every day after the 4th (days sorted
numerically) of a train case with more than 4 days also moves to test. public/train.csv holds id,
class, segmentation; public/test.csv id, class; train/ and test/ hold the
{case}/{case}_{day}/scans/*.png folders. private/test.csv holds id, class, predicted (the true RLE,
empty when absent), image_width and image_height (parts 3 and 4 of the slice file name). The sample
submission predicts "1 1 5 2" for every row. The raw sample submission is not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

CLASSES = ("large_bowel", "small_bowel", "stomach")
KEPT_DAYS = 4


def _late_days(table: Any, train_cases: set[str]) -> set[str]:
    """The case-days after the 4th of each train case with more than 4 days."""
    late: set[str] = set()
    for case, days in table.groupby("case")["case_day"]:
        if case in train_cases:
            ordered = sorted(days.unique(), key=lambda d: int(d.rsplit("_day", 1)[1]))
            late.update(ordered[KEPT_DAYS:])
    return late


def _slice_sizes(raw: Path, case_days: set[str]) -> dict[str, tuple[int, int]]:
    """(width, height) of each slice id, from slice_{SSSS}_{W}_{H}_{px}_{py}.png."""
    sizes = {}
    for case_day in case_days:
        case = case_day.split("_")[0]
        for path in (raw / "train" / case / case_day / "scans").glob("*.png"):
            parts = path.name.split("_")
            sizes[f"{case_day}_slice_{parts[1]}"] = (int(parts[2]), int(parts[3]))
    return sizes


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    table["case"] = table["id"].str.split("_").str[0]
    table["case_day"] = table["id"].str.rsplit("_slice_", n=1).str[0]
    train_cases, test_cases = train_test_split(table["case"].unique(), test_size=0.1, random_state=42)
    test_days = set(table.loc[table["case"].isin(set(test_cases)), "case_day"]) | _late_days(table, set(train_cases))
    in_test = table["case_day"].isin(test_days)
    train, test = table[~in_test], table[in_test]
    train[["id", "class", "segmentation"]].to_csv(public / "train.csv", index=False)
    test[["id", "class"]].to_csv(public / "test.csv", index=False)
    sizes = _slice_sizes(raw, test_days)
    answers = pd.DataFrame(
        {
            "id": test["id"],
            "class": test["class"],
            "predicted": test["segmentation"],
            "image_width": [sizes[i][0] for i in test["id"]],
            "image_height": [sizes[i][1] for i in test["id"]],
        }
    )
    answers.to_csv(private / "test.csv", index=False)
    test[["id", "class"]].assign(predicted="1 1 5 2").to_csv(public / "sample_submission.csv", index=False)
    for case_day in sorted(set(table["case_day"])):
        case = case_day.split("_")[0]
        folder = "test" if case_day in test_days else "train"
        shutil.copytree(raw / "train" / case / case_day, public / folder / case / case_day)

    assert not set(train["case_day"]) & test_days
    assert not set(train["case"]) & set(test_cases)
    assert len(train) + len(test) == len(table)
    assert "segmentation" not in pd.read_csv(public / "test.csv", nrows=0).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv for 10 cases of 1-2 days (one case has 6) with 3 slices each, and a 16-bit PNG per slice."""
    import pandas as pd
    from PIL import Image

    from podium.metrics.masks import rle_encode

    rows = []
    for c, case in enumerate(rng.choice(np.arange(2, 160), 10, replace=False)):
        n_days = 6 if c == 0 else int(rng.integers(1, 3))
        for day in sorted(rng.choice(np.arange(0, 40), n_days, replace=False)):
            width, height = (int(v) for v in rng.choice([10, 12], 2))
            scans = raw / "train" / f"case{case}" / f"case{case}_day{day}" / "scans"
            scans.mkdir(parents=True)
            for s in range(1, 4):
                pixels = rng.integers(0, 4000, (height, width)).astype(np.uint16)
                Image.fromarray(pixels).save(scans / f"slice_{s:04d}_{width}_{height}_1.50_1.50.png")
                for organ in CLASSES:
                    mask = np.zeros((height, width), bool)
                    if rng.random() < 0.7:
                        top, left = rng.integers(0, height - 3), rng.integers(0, width - 3)
                        mask[top : top + 3, left : left + 2] = True
                    rows.append((f"case{case}_day{day}_slice_{s:04d}", organ, rle_encode(mask, order="C")))
    pd.DataFrame(rows, columns=["id", "class", "segmentation"]).to_csv(raw / "train.csv", index=False)
    pd.DataFrame({"id": [rows[0][0]], "class": ["large_bowel"], "predicted": [""]}).to_csv(
        raw / "sample_submission.csv", index=False
    )

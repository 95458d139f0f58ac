"""Vesuvius Ink Detection: fragments 1 and 2 are train; fragment 3, renamed "a", is the test item.

Facts: public train/1/ and train/2/ copied whole; public test/a/ holds raw train/3/ except
inklabels.png, inklabels_rle.csv and ir.png; sample_submission.csv is one row (a, "1 1 5 1");
private inklabels_rle.csv holds Id "a", the Predicted RLE of train/3/inklabels_rle.csv, and width
and height from train/3/ir.png; private gold_submission.csv holds Id, Predicted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

HIDDEN = ("inklabels.png", "inklabels_rle.csv", "ir.png")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from PIL import Image

    for fragment in ("1", "2"):
        shutil.copytree(raw / "train" / fragment, public / "train" / fragment)
    shutil.copytree(
        raw / "train" / "3", public / "test" / "a", ignore=lambda _d, names: [n for n in names if n in HIDDEN]
    )
    labels = pd.read_csv(raw / "train" / "3" / "inklabels_rle.csv", dtype=str, keep_default_na=False)
    assert len(labels) == 1, "train/3/inklabels_rle.csv should hold a single row"
    with Image.open(raw / "train" / "3" / "ir.png") as image:
        width, height = image.size
    answers = pd.DataFrame(
        {"Id": ["a"], "Predicted": [labels["Predicted"].iloc[0]], "width": [width], "height": [height]}
    )
    answers.to_csv(private / "inklabels_rle.csv", index=False)
    answers[["Id", "Predicted"]].to_csv(private / "gold_submission.csv", index=False)
    pd.DataFrame({"Id": ["a"], "Predicted": ["1 1 5 1"]}).to_csv(public / "sample_submission.csv", index=False)

    assert not any((public / "test" / "a" / name).exists() for name in HIDDEN)
    assert sorted(p.name for p in (public / "train").iterdir()) == ["1", "2"]


def _rle_row_major(mask: np.ndarray) -> str:
    pixels = np.concatenate([[0], mask.flatten(order="C").astype(np.int8), [0]])
    edges = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    return " ".join(f"{s} {e - s}" for s, e in zip(edges[0::2], edges[1::2], strict=True))


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train/1..3 (3 uint16 TIFF slices, mask/ir/inklabels PNGs, inklabels_rle.csv) and a stub test/."""
    import pandas as pd
    from PIL import Image

    for fragment, (height, width) in {"1": (12, 10), "2": (10, 14), "3": (11, 13)}.items():
        folder = raw / "train" / fragment
        (folder / "surface_volume").mkdir(parents=True)
        for z in range(3):
            Image.fromarray(rng.integers(0, 65535, (height, width), dtype=np.uint16)).save(
                folder / "surface_volume" / f"{z:02d}.tif"
            )
        ink = rng.random((height, width)) < 0.3
        ink[0, 0] = True
        Image.fromarray(np.full((height, width), 255, dtype=np.uint8)).save(folder / "mask.png")
        Image.fromarray(rng.integers(0, 255, (height, width), dtype=np.uint8)).save(folder / "ir.png")
        Image.fromarray(ink.astype(np.uint8) * 255).save(folder / "inklabels.png")
        pd.DataFrame({"Id": [fragment], "Predicted": [_rle_row_major(ink)]}).to_csv(
            folder / "inklabels_rle.csv", index=False
        )
    (raw / "test" / "a" / "surface_volume").mkdir(parents=True)
    pd.DataFrame({"Id": ["a"], "Predicted": ["1 1 5 1"]}).to_csv(raw / "sample_submission.csv", index=False)

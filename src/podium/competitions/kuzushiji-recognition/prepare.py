"""kuzushiji-recognition: a 10% page split of train.csv, images re-zipped per side.

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)`` on the pages.
Public: ``train.csv`` (image_id, labels), ``train_images.zip`` / ``test_images.zip`` (jpgs at the
archive root), ``unicode_translation.csv`` (copied) and ``sample_submission.csv`` (labels =
"U+003F 1 1 U+FF2F 2 2"). Private: ``test.csv`` (image_id, labels as "unicode x y w h" boxes; empty
for pages without characters) and ``gold_submission.csv`` (each box as "unicode x+1 y+1").
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np

SAMPLE_LABELS = "U+003F 1 1 U+FF2F 2 2"


def _gold(labels: str) -> str:
    tokens = labels.split()
    assert len(tokens) % 5 == 0, f"labels are not 5-token boxes: {labels[:60]!r}"
    return " ".join(
        f"{c} {int(x) + 1} {int(y) + 1}" for c, x, y in zip(tokens[0::5], tokens[1::5], tokens[2::5], strict=True)
    )


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the pages, stream each page image into the train or test zip, write the CSVs."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    new_train, new_test = train_test_split(old, test_size=0.1, random_state=0)
    new_train.to_csv(public / "train.csv", index=False)
    new_test.to_csv(private / "test.csv", index=False)
    new_test.assign(labels=SAMPLE_LABELS).to_csv(public / "sample_submission.csv", index=False)
    new_test.assign(labels=new_test["labels"].map(_gold)).to_csv(private / "gold_submission.csv", index=False)
    shutil.copyfile(raw / "unicode_translation.csv", public / "unicode_translation.csv")

    side = {image_id: "train" for image_id in new_train["image_id"]} | {i: "test" for i in new_test["image_id"]}
    written = {"train": 0, "test": 0}
    with (
        zipfile.ZipFile(raw / "train_images.zip") as source,
        zipfile.ZipFile(public / "train_images.zip", "w", zipfile.ZIP_DEFLATED) as train_zip,
        zipfile.ZipFile(public / "test_images.zip", "w", zipfile.ZIP_DEFLATED) as test_zip,
    ):
        for info in source.infolist():
            path = PurePosixPath(info.filename)
            if info.is_dir() or path.suffix != ".jpg" or path.stem not in side:
                continue
            target = train_zip if side[path.stem] == "train" else test_zip
            entry = zipfile.ZipInfo(path.name, info.date_time)
            entry.compress_type = zipfile.ZIP_DEFLATED
            with source.open(info) as src, target.open(entry, "w") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            written[side[path.stem]] += 1

    assert set(new_train["image_id"]).isdisjoint(new_test["image_id"]) and len(new_train) + len(new_test) == len(old)
    assert written == {"train": len(new_train), "test": len(new_test)}, f"page images missing: {written}"


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.csv`` with 30 pages (two without characters), their tiny jpgs in ``train_images.zip``, the translation table."""
    from io import BytesIO

    import pandas as pd
    from PIL import Image

    codes = {"U+306E": "\u306e", "U+304B": "\u304b", "U+003F": "?", "U+FF2F": "\uff2f"}
    ids = [f"{book}_{page:03d}" for book in ("100241706", "umgy001", "hnsd005") for page in range(10)]
    labels = []
    with zipfile.ZipFile(raw / "train_images.zip", "w") as archive:
        for i, image_id in enumerate(ids):
            boxes = [] if i in (4, 17) else range(int(rng.integers(1, 5)))
            labels.append(
                " ".join(
                    f"{rng.choice(list(codes))} {rng.integers(0, 40)} {rng.integers(0, 60)} {rng.integers(3, 20)} {rng.integers(3, 20)}"
                    for _ in boxes
                )
            )
            buffer = BytesIO()
            Image.fromarray(rng.integers(0, 256, (12, 8, 3), dtype=np.uint8)).save(buffer, format="JPEG")
            archive.writestr(zipfile.ZipInfo(f"{image_id}.jpg", (2019, 7, 1, 0, 0, 0)), buffer.getvalue())
    pd.DataFrame({"image_id": ids, "labels": labels}).to_csv(raw / "train.csv", index=False)
    pd.DataFrame({"Unicode": list(codes), "char": list(codes.values())}).to_csv(
        raw / "unicode_translation.csv", index=False
    )

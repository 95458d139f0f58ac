"""Leaf Classification: split train.csv (from train.csv.zip) 90/10 with random_state 0.

Facts: train_test_split(test_size=0.1, random_state=0) on train.csv's rows; public train.csv (all
columns), test.csv (minus species), images/{id}.jpg for the new train and test ids only (taken from
images.zip), sample_submission.csv with 1/99 per species; private test.csv holds id plus the 99
species columns one-hot, in the sample submission's species order; private/images/ is created empty.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np


def _species() -> list[str]:
    import yaml

    declared = yaml.safe_load(Path(__file__).with_name("competition.yaml").read_text(encoding="utf-8"))
    return [str(s) for s in declared["class_columns"]["names"]]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    species = _species()
    with zipfile.ZipFile(raw / "train.csv.zip") as archive, archive.open("train.csv") as handle:
        table = pd.read_csv(handle, dtype=str, keep_default_na=False)
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["species"]).to_csv(public / "test.csv", index=False)

    ids, labels = test["id"].to_numpy(), test["species"].to_numpy()
    answers = pd.DataFrame({"id": ids, **{name: (labels == name).astype(int) for name in species}})
    answers.to_csv(private / "test.csv", index=False)
    sample = pd.DataFrame({"id": ids, **{name: np.full(len(ids), 1 / len(species)) for name in species}})
    sample.to_csv(public / "sample_submission.csv", index=False)

    (public / "images").mkdir()
    (private / "images").mkdir()
    wanted = {f"images/{i}.jpg" for i in table["id"]}
    with zipfile.ZipFile(raw / "images.zip") as archive:
        for member in archive.namelist():
            if member in wanted:
                (public / member).write_bytes(archive.read(member))

    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(table)
    assert answers["id"].tolist() == sample["id"].tolist()
    assert answers[species].sum(axis=1).eq(1).all(), "a test species is missing from the species list"
    assert len(list((public / "images").iterdir())) == len(table)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv.zip (40 rows, 192 features) and images.zip with images/{id}.jpg, test ids included."""
    import io

    import pandas as pd
    from PIL import Image

    species = _species()
    n = 40
    ids = np.arange(1, 2 * n + 1)
    train_ids = np.sort(rng.choice(ids, n, replace=False))
    features = {f"{g}{j}": rng.random(n).round(6) for g in ("margin", "shape", "texture") for j in range(1, 65)}
    table = pd.DataFrame({"id": train_ids, "species": rng.choice(species[:8], n), **features})
    with zipfile.ZipFile(raw / "train.csv.zip", "w") as archive:
        archive.writestr("train.csv", table.to_csv(index=False))
    with zipfile.ZipFile(raw / "images.zip", "w") as archive:
        for i in ids:
            buffer = io.BytesIO()
            Image.fromarray((rng.random((8, 8)) > 0.5).astype(np.uint8) * 255).save(buffer, format="JPEG")
            archive.writestr(f"images/{i}.jpg", buffer.getvalue())

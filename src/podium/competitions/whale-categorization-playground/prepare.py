"""Prepare whale-categorization-playground (facts: split, relabel, public, private).

For each whale Id in order of first appearance: with >= 2 images, ``sample(2, random_state=0)``
sends the first picked image to train and the second to test; a single image goes to test with
probability 0.1 (one ``numpy.random.default_rng(0).choice`` per singleton, in the same order).
The undecided rest is split with ``train_test_split(test_size=0.1, random_state=0)``. Test Ids
never seen in the new train become "new_whale". Images are copied to public train/ and test/.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 0.1
DEFAULT = "new_whale w_1287fbc w_98baff9 w_7554f44 w_1eafe46"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Assign every image to train or test as the facts describe, relabel, copy images."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    split = np.full(len(old), "undecided", dtype=object)
    rng = np.random.default_rng(0)
    groups = old.groupby("Id", sort=False).indices
    for whale in old["Id"].unique():
        rows = groups[whale]
        if len(rows) >= 2:
            picked = old.iloc[rows].sample(2, random_state=0).index
            split[picked[0]], split[picked[1]] = "train", "test"
        else:
            split[rows[0]] = rng.choice(["train", "test"], replace=False, p=[1 - TEST_SIZE, TEST_SIZE])
    remaining = old[split == "undecided"]
    rest_train, rest_test = train_test_split(remaining, test_size=TEST_SIZE, random_state=0)
    split[rest_train.index] = "train"
    split[rest_test.index] = "test"
    train = old[split == "train"]
    answers = old[split == "test"].copy()
    answers.loc[~answers["Id"].isin(set(train["Id"])), "Id"] = "new_whale"
    answers.to_csv(private / "test.csv", index=False)
    train.to_csv(public / "train.csv", index=False)
    sample = answers.assign(Id=DEFAULT)
    sample.to_csv(public / "sample_submission.csv", index=False)
    for frame, folder in ((train, "train"), (answers, "test")):
        (public / folder).mkdir()
        for image in frame["Image"]:
            shutil.copyfile(raw / "train" / image, public / folder / image)

    assert len(train) + len(answers) == len(old) and set(train["Image"]).isdisjoint(answers["Image"])
    assert "new_whale" in set(answers["Id"]) and sample["Image"].tolist() == answers["Image"].tolist()
    assert len(list((public / "test").iterdir())) == len(answers)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 60 images (new_whale x12, multi-image whales, singletons) and their jpgs in train/."""
    import pandas as pd
    from PIL import Image

    whales = ["new_whale"] * 12
    for _ in range(10):
        whales += [f"w_{rng.bytes(4).hex()[:7]}"] * int(rng.integers(2, 5))
    while len(whales) < 60:
        whales.append(f"w_{rng.bytes(4).hex()[:7]}")
    whales = [str(w) for w in rng.permutation(np.array(whales, dtype=object))]
    images = [f"{rng.bytes(4).hex()}.jpg" for _ in whales]
    pd.DataFrame({"Image": images, "Id": whales}).to_csv(raw / "train.csv", index=False)
    (raw / "train").mkdir()
    (raw / "test").mkdir()
    for image in images:
        Image.fromarray(rng.integers(0, 255, (8, 12), dtype=np.uint8)).save(raw / "train" / image)
    (raw / "sample_submission.csv").write_text("Image,Id\n")

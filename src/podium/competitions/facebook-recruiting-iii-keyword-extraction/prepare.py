"""Prepare Facebook Recruiting III - Keyword Extraction (post -> tag set).

Facts: raw ``Train.zip`` holds ``Train.csv`` (Id, Title, Body, Tags; ~6M rows); it is split with
``train_test_split(test_size=0.1, random_state=0)`` on the rows in file order. Public gets
train.csv (all columns) and test.csv (no Tags); the answers are the test rows with all four
columns; the sample submission is the public test plus Tags = "javascript c# python php java".
Raw Test.zip and the sample submission are ignored. The split streams the multi-gigabyte CSV
through podium's declarative splitter, which picks the same rows as the in-memory split.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np

DEFAULT_TAGS = "javascript c# python php java"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split Train.csv (inside Train.zip) into public train/test, answers and a sample submission."""
    import pandas as pd

    from podium.data.split import SplitSpec, count_rows, split_csv

    work = public.parent / "_work"
    work.mkdir()
    try:
        with (
            zipfile.ZipFile(raw / "Train.zip") as archive,
            archive.open("Train.csv") as src,
            (work / "Train.csv").open("wb") as out,
        ):
            shutil.copyfileobj(src, out, 1 << 24)
        total = count_rows(work / "Train.csv")
        spec = SplitSpec(source="Train.csv", test_size=0.1, random_state=0, drop_from_test=("Tags",))
        n_train, n_test = split_csv(spec, work, public, private, "test.csv")
    finally:
        shutil.rmtree(work)

    sample = public / "sample_submission.csv"
    chunks = pd.read_csv(public / "test.csv", dtype=str, keep_default_na=False, chunksize=500_000)
    for i, chunk in enumerate(chunks):
        chunk.assign(Tags=DEFAULT_TAGS).to_csv(sample, mode="a", header=i == 0, index=False)

    train_ids = set(pd.read_csv(public / "train.csv", usecols=["Id"], dtype=str)["Id"])
    test_ids = pd.read_csv(public / "test.csv", usecols=["Id"], dtype=str)["Id"]
    answer_ids = pd.read_csv(private / "test.csv", usecols=["Id"], dtype=str)["Id"]
    sample_ids = pd.read_csv(sample, usecols=["Id"], dtype=str)["Id"]
    assert n_train + n_test == total and len(test_ids) == n_test
    assert not train_ids & set(test_ids)
    assert list(answer_ids) == list(test_ids) == list(sample_ids)
    assert "Tags" not in pd.read_csv(public / "test.csv", nrows=0).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """A tiny Train.zip holding Train.csv (Id, Title, Body, Tags); bodies hold HTML, commas, newlines."""
    import pandas as pd

    tags = ["c#", "java", "php", "javascript", "python", "android", "jquery", "html", "ios", "c++"]
    words = ["how", "to", "parse", "a", "string,", "list", "in", "loop", "error", "when", "calling"]
    n = 60
    frame = pd.DataFrame(
        {
            "Id": np.arange(1, n + 1),
            "Title": [" ".join(rng.choice(words, 6)).capitalize() for _ in range(n)],
            "Body": [
                "<p>" + " ".join(rng.choice(words, 10)) + "</p>\n\n<pre><code>x = 1\n</code></pre>\n" for _ in range(n)
            ],
            "Tags": [" ".join(rng.choice(tags, int(rng.integers(1, 5)), replace=False)) for _ in range(n)],
        }
    )
    with zipfile.ZipFile(raw / "Train.zip", "w") as archive:
        archive.writestr("Train.csv", frame.to_csv(index=False))

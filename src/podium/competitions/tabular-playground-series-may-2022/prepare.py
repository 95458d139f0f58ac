"""TPS May 2022: a fixed-size random split of train.csv with renumbered ids (facts: split).

Facts implemented: ``train_test_split(train.csv, test_size=100000, random_state=0)`` on the rows
in file order; ids are renumbered in split order (new train 0..len(train)-1, new test
len(train)..len(train)+99,999); public test.csv drops ``target``; private test.csv keeps every
column; the sample submission is ``id, target=0.5``. A raw file with no more rows than TEST_SIZE
(the tiny generated fixture only) gets a 10% split instead. Cells are copied as text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

TEST_SIZE = 100_000
SMALL_FRACTION = 0.1


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    test_size: float | int = TEST_SIZE if len(old) > TEST_SIZE else SMALL_FRACTION
    train, test = train_test_split(old, test_size=test_size, random_state=0)
    train = train.reset_index(drop=True)
    test = test.reset_index(drop=True)
    train["id"] = np.arange(len(train))
    test["id"] = np.arange(len(train), len(train) + len(test))

    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["target"]).to_csv(public / "test.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "target": 0.5}).to_csv(public / "sample_submission.csv", index=False)

    assert len(train) + len(test) == len(old)
    assert len(old) <= TEST_SIZE or len(test) == TEST_SIZE
    assert not set(train["id"]) & set(test["id"])
    assert list(train.columns) == list(old.columns) == list(test.columns)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv: id, f_00..f_30 (f_27 a 10-letter string; f_07..f_18 and f_29/f_30 integers), target; 80 rows."""
    import pandas as pd

    n = 80
    columns: dict[str, object] = {"id": np.arange(n)}
    for i in range(31):
        name = f"f_{i:02d}"
        if i == 27:
            columns[name] = ["".join(rng.choice(list("ABCDEFGHIJKLMNOPQRST"), 10)) for _ in range(n)]
        elif 7 <= i <= 18 or i == 30:
            columns[name] = rng.integers(0, 15, n)
        elif i == 29:
            columns[name] = rng.integers(0, 2, n)
        else:
            columns[name] = rng.normal(0, 1.5, n).round(6)
    columns["target"] = rng.integers(0, 2, n)
    pd.DataFrame(columns).to_csv(raw / "train.csv", index=False)

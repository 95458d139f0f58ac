"""ventilator-pressure-prediction: a 10% split of whole breaths.

Facts implemented: train.csv is read with int32/int8/float64 dtypes (floats round-tripped); the
row-index groups of ``groupby("breath_id")`` (sorted by breath_id) are split with
``train_test_split(groups, test_size=0.1, random_state=0)`` and flattened in split order. As in the
published split, the new train and the new test set are each renumbered 1..N in that order, so an
id is a row number within its own file (the id column is declared ``row_number`` so the leak scan
knows that a shared number is not a leak). Public: ``train.csv`` (8 columns), ``test.csv`` (no
pressure) and ``sample_submission.csv`` (id, pressure = 0), floats written with ``%.10g``. Private
``test.csv``: all 8 columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DTYPES = {
    "id": "int32",
    "breath_id": "int32",
    "R": "int8",
    "C": "int8",
    "time_step": "float64",
    "u_in": "float64",
    "u_out": "int8",
    "pressure": "float64",
}


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the breaths 90/10 (seed 0), renumber ids, write the four CSVs."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    from podium.grading.published import pandas_read_options

    old = pd.read_csv(raw / "train.csv", dtype=DTYPES, **pandas_read_options())
    groups = [frame.index.tolist() for _, frame in old.groupby("breath_id")]
    train_groups, test_groups = train_test_split(groups, test_size=0.1, random_state=0)
    new_train = old.loc[[i for group in train_groups for i in group]].copy()
    new_test = old.loc[[i for group in test_groups for i in group]].copy()
    new_train["id"] = range(1, len(new_train) + 1)
    new_test["id"] = range(1, len(new_test) + 1)
    public_test = new_test.drop(columns="pressure")
    new_train.to_csv(public / "train.csv", index=False, float_format="%.10g")
    public_test.to_csv(public / "test.csv", index=False, float_format="%.10g")
    public_test[["id"]].assign(pressure=0).to_csv(public / "sample_submission.csv", index=False, float_format="%.10g")
    new_test.to_csv(private / "test.csv", index=False, float_format="%.10g")

    assert set(new_train["breath_id"]).isdisjoint(new_test["breath_id"]), "a breath is on both sides"
    assert len(new_train) + len(new_test) == len(old)
    assert list(old.columns) == list(DTYPES) and public_test.shape[1] == 7


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.csv`` with 20 breaths of 8 time steps (u_out 0 then 1), ids 1..160."""
    import pandas as pd

    breaths = np.sort(rng.choice(np.arange(1, 200), 20, replace=False))
    n = len(breaths) * 8
    frame = pd.DataFrame(
        {
            "id": np.arange(1, n + 1),
            "breath_id": np.repeat(breaths, 8),
            "R": np.repeat(rng.choice([5, 20, 50], len(breaths)), 8),
            "C": np.repeat(rng.choice([10, 20, 50], len(breaths)), 8),
            "time_step": np.tile(np.arange(8) * 0.0336, len(breaths)) + rng.uniform(0, 1e-3, n),
            "u_in": rng.uniform(0, 100, n),
            "u_out": np.tile([0, 0, 0, 0, 0, 1, 1, 1], len(breaths)),
            "pressure": rng.uniform(-1.9, 64.8, n),
        }
    )
    frame.to_csv(raw / "train.csv", index=False)

"""Practice: diabetes progression (regression), from scikit-learn's bundled diabetes data.

Facts: raw/diabetes.csv is the table ``load_diabetes(scaled=False)`` ships (age, sex, bmi, bp,
s1..s6 in original units; ``target`` the disease progression one year later). The blood serum
columns s1..s6 get their names (tc, ldl, hdl, tch, ltg, glu), the target becomes ``progression``,
rows get ids 1..N from a permutation seeded 0, and train_test_split(test_size=0.2, random_state=0)
makes public train.csv (with ``progression``) and test.csv (without); private test.csv holds id
and ``progression``; the sample submission predicts the declared default everywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RAW = "diabetes.csv"
TARGET = "progression"
TEST_SIZE = 0.2
SERUM = {"s1": "tc", "s2": "ldl", "s3": "hdl", "s4": "tch", "s5": "ltg", "s6": "glu"}


def fetch_raw(raw: Path) -> None:
    from sklearn.datasets import load_diabetes

    load_diabetes(as_frame=True, scaled=False).frame.to_csv(raw / RAW, index=False)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import declared_default, split_practice

    table = pd.read_csv(raw / RAW).rename(columns={**SERUM, "target": TARGET})
    table["sex"] = table["sex"].astype(int)
    sample = {TARGET: declared_default(__file__, TARGET)}
    _, test = split_practice(table, public, private, target=TARGET, test_size=TEST_SIZE, sample=sample)
    assert np.isfinite(test[TARGET]).all()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """diabetes.csv: 50 real rows in the shipped layout."""
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True, scaled=False).frame
    frame.iloc[np.sort(rng.choice(len(frame), 50, replace=False))].to_csv(raw / RAW, index=False)

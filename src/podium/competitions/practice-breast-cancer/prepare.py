"""Practice: breast cancer diagnosis (binary), from scikit-learn's bundled Wisconsin data set.

Facts: raw/breast_cancer.csv is the table ``load_breast_cancer`` ships (30 features under its
names, ``target`` 0 = malignant, 1 = benign). Feature names become snake_case, the target becomes
``malignant`` (1 = malignant), rows get ids 1..N from a permutation seeded 0 (the shipped order is
not random), and train_test_split(test_size=0.25, random_state=0) makes public train.csv (with
``malignant``) and test.csv (without); private test.csv holds id and ``malignant``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RAW = "breast_cancer.csv"
TARGET = "malignant"
TEST_SIZE = 0.25


def fetch_raw(raw: Path) -> None:
    from sklearn.datasets import load_breast_cancer

    load_breast_cancer(as_frame=True).frame.to_csv(raw / RAW, index=False)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import declared_default, split_practice

    table = pd.read_csv(raw / RAW)
    malignant = (table.pop("target") == 0).astype(int)
    table.columns = [c.replace(" ", "_") for c in table.columns]
    table[TARGET] = malignant
    sample = {TARGET: declared_default(__file__, TARGET)}
    _, test = split_practice(table, public, private, target=TARGET, test_size=TEST_SIZE, sample=sample)
    assert set(test[TARGET]) <= {0, 1}


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """breast_cancer.csv: 60 real rows, both classes, in the shipped layout."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    frame: pd.DataFrame = load_breast_cancer(as_frame=True).frame
    rows = np.concatenate([rng.choice(np.flatnonzero(frame["target"] == k), 30, replace=False) for k in (0, 1)])
    frame.iloc[np.sort(rows)].to_csv(raw / RAW, index=False)

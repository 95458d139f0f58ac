"""Practice: wine cultivars (3 classes), from scikit-learn's bundled UCI wine recognition data.

Facts: raw/wine.csv is the table ``load_wine`` ships (13 features, ``target`` 0/1/2, sorted by
class). The target becomes ``cultivar`` (class_0, class_1, class_2), ``/`` in a feature name
becomes ``_``, rows get ids 1..N from a permutation seeded 0, and train_test_split(test_size=0.3,
random_state=0) makes public train.csv (with ``cultivar``) and test.csv (without); private
test.csv holds id and the three class columns one-hot; the sample submission gives 1/3 to each.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RAW = "wine.csv"
CLASSES = ("class_0", "class_1", "class_2")
TEST_SIZE = 0.3


def fetch_raw(raw: Path) -> None:
    from sklearn.datasets import load_wine

    load_wine(as_frame=True).frame.to_csv(raw / RAW, index=False)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import split_practice

    table = pd.read_csv(raw / RAW)
    cultivar = np.array(CLASSES)[table.pop("target").to_numpy()]
    table.columns = [c.replace("/", "_") for c in table.columns]
    table["cultivar"] = cultivar
    sample = {name: 1 / len(CLASSES) for name in CLASSES}
    split_practice(table, public, private, target="cultivar", test_size=TEST_SIZE, sample=sample, classes=CLASSES)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """wine.csv: 15 real rows of each class, sorted by class as shipped."""
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame
    rows = np.concatenate([rng.choice(np.flatnonzero(frame["target"] == k), 15, replace=False) for k in (0, 1, 2)])
    frame.iloc[np.sort(rows)].to_csv(raw / RAW, index=False)

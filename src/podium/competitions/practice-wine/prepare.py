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
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / RAW)
    cultivar = np.array(CLASSES)[table.pop("target").to_numpy()]
    table.columns = [c.replace("/", "_") for c in table.columns]
    table["cultivar"] = cultivar
    table.insert(0, "id", np.random.default_rng(0).permutation(len(table)) + 1)
    train, test = train_test_split(table, test_size=TEST_SIZE, random_state=0)
    train, test = train.sort_values("id"), test.sort_values("id")
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["cultivar"]).to_csv(public / "test.csv", index=False)
    labels = test["cultivar"].to_numpy()
    answers = pd.DataFrame({"id": test["id"], **{name: (labels == name).astype(int) for name in CLASSES}})
    answers.to_csv(private / "test.csv", index=False)
    sample = pd.DataFrame({"id": test["id"], **{name: 1 / len(CLASSES) for name in CLASSES}})
    sample.to_csv(public / "sample_submission.csv", index=False)

    assert not set(train["id"]) & set(test["id"])
    assert len(train) + len(test) == len(table) and table["id"].is_unique
    assert answers["id"].tolist() == sample["id"].tolist()
    assert answers[list(CLASSES)].sum(axis=1).eq(1).all()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """wine.csv: 15 real rows of each class, sorted by class as shipped."""
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame
    rows = np.concatenate([rng.choice(np.flatnonzero(frame["target"] == k), 15, replace=False) for k in (0, 1, 2)])
    frame.iloc[np.sort(rows)].to_csv(raw / RAW, index=False)

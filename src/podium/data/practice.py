"""The practice suite's shared split: every ``practice-*`` prepare.py ends with the same block.

A practice table (built from data a package ships) gets ids 1..N from a permutation seeded 0 (the
shipped order is often sorted by class, so a row index would give the label away); then
``train_test_split(test_size, random_state=0)``, both sides sorted by id, and four files: public
train.csv (with the target) and test.csv (without), private test.csv (id and the target, or one
0/1 column per class) and the sample submission. Their reference leaderboards were built from
exactly these files, so the bytes must not change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["declared_default", "split_practice"]


def declared_default(prepare_file: str | Path, column: str) -> float:
    """The ``default`` of ``column`` in the competition.yaml beside ``prepare_file``, as a float."""
    import yaml

    declared = yaml.safe_load(Path(prepare_file).with_name("competition.yaml").read_text(encoding="utf-8"))
    return float(declared["columns"][column]["default"])


def split_practice(
    table: pd.DataFrame,
    public: Path,
    private: Path,
    *,
    target: str,
    test_size: float,
    sample: Mapping[str, Any],
    id_column: str = "id",
    classes: Sequence[str] | None = None,
    public_columns: Sequence[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Number, split and write ``table`` (ids are inserted into it); returns (train, test) with ids.

    ``sample``: the sample submission's columns after the id, each a constant. ``classes``: the
    answers hold one 0/1 column per class instead of ``target``. ``public_columns``: the public
    files hold these columns (train.csv also ``target``) instead of every column.
    """
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table.insert(0, id_column, np.random.default_rng(0).permutation(len(table)) + 1)
    train, test = train_test_split(table, test_size=test_size, random_state=0)
    train, test = train.sort_values(id_column), test.sort_values(id_column)
    if public_columns is None:
        train.to_csv(public / "train.csv", index=False)
        test.drop(columns=[target]).to_csv(public / "test.csv", index=False)
    else:
        train[[*public_columns, target]].to_csv(public / "train.csv", index=False)
        test[list(public_columns)].to_csv(public / "test.csv", index=False)
    if classes is None:
        answers = test[[id_column, target]]
    else:
        labels = test[target].to_numpy()
        answers = pd.DataFrame({id_column: test[id_column], **{name: (labels == name).astype(int) for name in classes}})
    answers.to_csv(private / "test.csv", index=False)
    pd.DataFrame({id_column: test[id_column], **sample}).to_csv(public / "sample_submission.csv", index=False)

    assert not set(train[id_column]) & set(test[id_column])
    assert len(train) + len(test) == len(table) and table[id_column].is_unique
    assert classes is None or answers[list(classes)].sum(axis=1).eq(1).all(), "a label is not one of the classes"
    return train, test

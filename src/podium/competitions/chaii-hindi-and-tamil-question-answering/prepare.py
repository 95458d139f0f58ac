"""Prepare chaii (Hindi/Tamil extractive QA).

Facts: raw ``train.csv`` (id, context, question, answer_text, answer_start, language) is split
with ``train_test_split(test_size=0.1, random_state=0)``; public ``test.csv`` drops answer_text
and answer_start; the answers are ``[id, PredictionString]`` with PredictionString = answer_text;
the sample submission predicts "dummy text". Raw test.csv and sample_submission.csv are ignored.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

LABELS = ["answer_start", "answer_text"]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split raw train.csv into public train/test, private answers and a sample submission."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    answers = test[["id", "answer_text"]].rename(columns={"answer_text": "PredictionString"})
    sample = answers.assign(PredictionString="dummy text")

    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=LABELS).to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)

    assert len(train) + len(test) == len(old)
    assert not set(train["id"]) & set(test["id"])
    assert list(sample["id"]) == list(answers["id"])
    assert not set(LABELS) & set(pd.read_csv(public / "test.csv", nrows=0).columns)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """A tiny train.csv in the real schema; answer_text is a real span of context."""
    import pandas as pd

    words = {"hindi": ["भारत", "की", "राजधानी", "नई", "दिल्ली", "है"], "tamil": ["சென்னை", "தமிழ்நாட்டின்", "தலைநகரம்", "ஆகும்"]}
    rows = []
    for i in range(40):
        language = "hindi" if i % 3 else "tamil"
        tokens = list(rng.choice(words[language], 12))
        start = int(rng.integers(0, 10))
        answer = " ".join(tokens[start : start + 2])
        context = " ".join(tokens)
        rows.append(
            {
                "id": f"{rng.integers(16**8, 16**9):x}",
                "context": context,
                "question": " ".join(rng.choice(words[language], 4)) + "?",
                "answer_text": answer,
                "answer_start": context.index(answer),
                "language": language,
            }
        )
    pd.DataFrame(rows).to_csv(raw / "train.csv", index=False)

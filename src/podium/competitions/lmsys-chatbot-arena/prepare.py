"""Prepare lmsys-chatbot-arena (facts: split, public, private, sample_submission).

train.csv (~57.5k rows) is split with ``train_test_split(test_size=0.1, random_state=0)`` by the
shared streaming split (cells copied as text). Public test.csv keeps id, prompt, response_a,
response_b; private answers.csv keeps all nine columns; the sample submission gives 1/3 to each
class. A prepare.py rather than ``prepare.split`` only because the generated raw file needs
one-hot winner columns, which ``prepare.raw`` cannot express.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CLASSES = ["winner_model_a", "winner_model_b", "winner_tie"]
TEST_SIZE = 0.1


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv 90/10; hide the models and the winner from the public test file."""
    import pandas as pd

    from podium.data.split import SplitSpec, split_csv

    spec = SplitSpec(
        source="train.csv", test_size=TEST_SIZE, random_state=0, drop_from_test=("model_a", "model_b", *CLASSES)
    )
    n_train, n_test = split_csv(spec, raw, public, private, "answers.csv")
    answers = pd.read_csv(private / "answers.csv", dtype=str, keep_default_na=False)
    sample = answers[["id"]].assign(**{c: 1 / 3 for c in CLASSES})
    sample.to_csv(public / "sample_submission.csv", index=False)

    train = pd.read_csv(public / "train.csv", dtype=str, keep_default_na=False)
    test = pd.read_csv(public / "test.csv", dtype=str, keep_default_na=False)
    assert test.columns.tolist() == ["id", "prompt", "response_a", "response_b"]
    assert set(train["id"]).isdisjoint(test["id"]) and len(test) == len(answers) == n_test
    assert len(train) == n_train and sample["id"].tolist() == answers["id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 60 rows: JSON-list prompts/responses (some with commas and quotes), one-hot winners."""
    import pandas as pd

    models = ["gpt-4-1106-preview", "claude-2.1", "llama-2-70b-chat", "mixtral-8x7b-instruct-v0.1"]
    words = ["why", "is", "the", "sky", "blue", "write", "a", "poem", "about", "cats,", 'say "hi"']
    n = 60

    def text() -> str:
        return json.dumps([" ".join(rng.choice(words, int(rng.integers(2, 8))))])

    winner = rng.integers(0, 3, n)
    frame = pd.DataFrame(
        {
            "id": 30_192 + np.cumsum(rng.integers(1, 100_000, n)),
            "model_a": rng.choice(models, n),
            "model_b": rng.choice(models, n),
            "prompt": [text() for _ in range(n)],
            "response_a": [text() for _ in range(n)],
            "response_b": [text() for _ in range(n)],
        }
    )
    for j, name in enumerate(CLASSES):
        frame[name] = (winner == j).astype(int)
    frame.to_csv(raw / "train.csv", index=False)
    frame.head(3)[["id", "prompt", "response_a", "response_b"]].to_csv(raw / "test.csv", index=False)

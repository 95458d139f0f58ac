"""google-quest-challenge: a 10% row split of train.csv, with one swap so every target varies in test.

Facts implemented: ``train_test_split(train.csv, test_size=0.1, random_state=0)``; when
``question_type_spelling`` is constant in the new test set, the first test row (by position) trades
places with the first new-train row whose ``question_type_spelling`` is not 0. Public: ``train.csv``
(41 columns), ``test.csv`` (the 11 non-target columns) and ``sample_submission.csv`` (qa_id and every
target = linspace(0, 1, n) in row order). Private ``test.csv``: qa_id and the 30 targets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

TARGETS = [
    "question_asker_intent_understanding",
    "question_body_critical",
    "question_conversational",
    "question_expect_short_answer",
    "question_fact_seeking",
    "question_has_commonly_accepted_answer",
    "question_interestingness_others",
    "question_interestingness_self",
    "question_multi_intent",
    "question_not_really_a_question",
    "question_opinion_seeking",
    "question_type_choice",
    "question_type_compare",
    "question_type_consequence",
    "question_type_definition",
    "question_type_entity",
    "question_type_instructions",
    "question_type_procedure",
    "question_type_reason_explanation",
    "question_type_spelling",
    "question_well_written",
    "answer_helpful",
    "answer_level_of_information",
    "answer_plausible",
    "answer_relevance",
    "answer_satisfaction",
    "answer_type_instructions",
    "answer_type_procedure",
    "answer_type_reason_explanation",
    "answer_well_written",
]
FEATURES = [
    "qa_id",
    "question_title",
    "question_body",
    "question_user_name",
    "question_user_page",
    "answer",
    "answer_user_name",
    "answer_user_page",
    "url",
    "category",
    "host",
]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.csv 90/10 (seed 0), apply the question_type_spelling swap, write the three files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    old = pd.read_csv(raw / "train.csv")
    train_rows, test_rows = (list(r) for r in train_test_split(np.arange(len(old)), test_size=0.1, random_state=0))
    spelling = old["question_type_spelling"]
    if spelling.iloc[test_rows].nunique() == 1:
        swap = next(i for i, row in enumerate(train_rows) if spelling.iloc[row] != 0)
        test_rows[0], train_rows[swap] = train_rows[swap], test_rows[0]
    new_train, new_test = old.iloc[train_rows], old.iloc[test_rows]
    answers = new_test[["qa_id", *TARGETS]]
    sample = answers.copy()
    sample[TARGETS] = np.tile(np.linspace(0, 1, len(sample))[:, None], (1, len(TARGETS)))

    new_train.to_csv(public / "train.csv", index=False)
    new_test[FEATURES].to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)

    assert list(old.columns) == FEATURES + TARGETS, "train.csv does not have the 41 expected columns"
    assert set(new_train["qa_id"]).isdisjoint(new_test["qa_id"]) and len(new_train) + len(new_test) == len(old)
    assert all(answers[c].nunique() > 1 for c in TARGETS), "a target is constant in the test set"
    assert sample["qa_id"].equals(answers["qa_id"]) and not set(TARGETS) & set(FEATURES)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.csv`` with 60 Q&A rows; question_type_spelling is 0 except on three rows."""
    import pandas as pd

    n = 60
    words = np.array(
        ["how", "why", "what", "does", "python", "list", "error", "install", "value", "function", "server", "file"]
    )

    def text(k: int) -> list[str]:
        return [" ".join(rng.choice(words, k)) + "?" for _ in range(n)]

    frame = {
        "qa_id": np.sort(rng.choice(np.arange(1, 10_000), n, replace=False)),
        "question_title": text(4),
        "question_body": [t + ', "quoted", and\nmore' for t in text(8)],
        "question_user_name": [f"user{i}" for i in rng.integers(0, 500, n)],
        "question_user_page": [f"https://example.com/users/{i}" for i in rng.integers(0, 500, n)],
        "answer": text(10),
        "answer_user_name": [f"user{i}" for i in rng.integers(0, 500, n)],
        "answer_user_page": [f"https://example.com/users/{i}" for i in rng.integers(0, 500, n)],
        "url": [f"https://example.com/questions/{i}" for i in range(n)],
        "category": rng.choice(["TECHNOLOGY", "STACKOVERFLOW", "CULTURE", "SCIENCE", "LIFE_ARTS"], n),
        "host": rng.choice(["stackoverflow.com", "superuser.com", "english.stackexchange.com"], n),
    }
    for target in TARGETS:
        frame[target] = rng.choice([0.0, 0.333333333333333, 0.5, 0.666666666666667, 1.0], n)
    frame["question_type_spelling"] = np.where(np.isin(np.arange(n), [7, 30, 41]), 0.333333333333333, 0.0)
    pd.DataFrame(frame).to_csv(raw / "train.csv", index=False)

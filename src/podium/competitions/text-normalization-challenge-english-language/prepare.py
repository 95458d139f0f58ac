"""text-normalization-challenge-english-language: split the normalised tokens by sentence.

Facts implemented: en_train.csv (inside en_train.csv.zip) is split on its unique sentence ids, in
order of appearance, with ``train_test_split(test_size=0.1, random_state=0)``; sentence ids are then
renumbered 0..K-1 separately in train and test, in order of first appearance. public holds
en_train.csv.zip (sentence_id, token_id, class, before, after), en_test_2.csv.zip (sentence_id,
token_id, before) and en_sample_submission_2.csv.zip (id, after = before): CSVs quoted with
QUOTE_NONNUMERIC inside stored (uncompressed) zips. private holds answers.csv (id, after) with
id = "{sentence_id}_{token_id}" and sample_submission.csv, the configured sample submission.
Token text is read verbatim (no "NA"/"null" -> NaN conversion).
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

TEXT = {"class": str, "before": str, "after": str}


def _renumber(frame: Any) -> Any:
    import pandas as pd

    codes, _ = pd.factorize(frame["sentence_id"])
    return frame.assign(sentence_id=codes)


def _write_zip(frame: Any, path: Path, member: str) -> None:
    text = frame.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC)
    entry = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))  # a fixed time keeps the zip reproducible
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr(entry, text)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "en_train.csv.zip") as archive:
        table = pd.read_csv(io.BytesIO(archive.read("en_train.csv")), dtype=TEXT, keep_default_na=False)
    sentences = table["sentence_id"].unique()
    _, test_sentences = train_test_split(sentences, test_size=0.1, random_state=0)
    in_test = table["sentence_id"].isin(set(test_sentences))
    train, test = _renumber(table[~in_test]), _renumber(table[in_test])
    ids = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
    answers = pd.DataFrame({"id": ids, "after": test["after"]})
    sample = pd.DataFrame({"id": ids, "after": test["before"]})
    _write_zip(train, public / "en_train.csv.zip", "en_train.csv")
    _write_zip(test[["sentence_id", "token_id", "before"]], public / "en_test_2.csv.zip", "en_test_2.csv")
    _write_zip(sample, public / "en_sample_submission_2.csv.zip", "en_sample_submission_2.csv")
    answers.to_csv(private / "answers.csv", index=False)
    sample.to_csv(private / "sample_submission.csv", index=False)

    assert not set(table.loc[~in_test, "sentence_id"]) & set(test_sentences)
    assert len(train) + len(test) == len(table)
    assert ids.is_unique and len(answers) == len(sample)
    assert set(pd.read_csv(public / "en_test_2.csv.zip", nrows=0).columns) == {"sentence_id", "token_id", "before"}


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """en_train.csv.zip with 30 sentences of 2-5 tokens (some NA-like text), and the unused test zips."""
    import pandas as pd

    tokens = [
        ("PLAIN", "Hello", "Hello"),
        ("PUNCT", ",", ","),
        ("CARDINAL", "12", "twelve"),
        ("DATE", "1 May 2001", "the first of may two thousand one"),
        ("PLAIN", "NA", "NA"),
        ("LETTERS", "BBC", "b b c"),
        ("PLAIN", 'say "hi"', 'say "hi"'),
        ("PLAIN", "null", "null"),
    ]
    rows = []
    for sentence in range(30):
        for token in range(int(rng.integers(2, 6))):
            rows.append((sentence, token, *tokens[int(rng.integers(0, len(tokens)))]))
    train = pd.DataFrame(rows, columns=["sentence_id", "token_id", "class", "before", "after"])
    _write_zip(train, raw / "en_train.csv.zip", "en_train.csv")
    test = train.loc[:3, ["sentence_id", "token_id", "before"]]
    _write_zip(test, raw / "en_test_2.csv.zip", "en_test_2.csv")
    ids = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
    _write_zip(
        pd.DataFrame({"id": ids, "after": test["before"]}),
        raw / "en_sample_submission_2.csv.zip",
        "en_sample_submission_2.csv",
    )

"""text-normalization-challenge-russian-language: a 10% split of ru_train.csv by sentence.

Facts implemented: ``train_test_split(unique sentence_ids, test_size=0.1, random_state=0)`` (ids in
order of first appearance); sentence ids are then renumbered 0..K-1 separately in train and test,
in order of first appearance. Public (zips stored without compression, CSVs written with
QUOTE_NONNUMERIC): ``ru_train.csv.zip`` (sentence_id, token_id, class, before, after),
``ru_test_2.csv.zip`` (sentence_id, token_id, before) and ``ru_sample_submission_2.csv.zip`` (id,
after = before). Private: ``answers.csv`` (id = "{sentence_id}_{token_id}", after) and
``sample_submission.csv`` (the unzipped sample). The raw stage-2 test and sample files are unused.
"""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np


def _csv(frame: Any) -> str:
    text: str = frame.to_csv(index=False, quotechar='"', quoting=csv.QUOTE_NONNUMERIC)
    return text


def _zip_text(text: str, name: str, dst: Path) -> None:
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split by sentence, renumber sentences per side, write the quoted CSVs and stored zips."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "ru_train.csv.zip") as archive, archive.open("ru_train.csv") as member:
        old = pd.read_csv(io.BytesIO(member.read()))
    _, test_sentences = train_test_split(old["sentence_id"].unique(), test_size=0.1, random_state=0)
    in_test = old["sentence_id"].isin(test_sentences)
    new_train, answers = old[~in_test].copy(), old[in_test].copy()
    for frame in (new_train, answers):
        order = {sentence: k for k, sentence in enumerate(frame["sentence_id"].unique())}
        frame["sentence_id"] = frame["sentence_id"].map(order)
    new_test = answers.drop(columns=["after", "class"])
    ids = answers["sentence_id"].astype(str) + "_" + answers["token_id"].astype(str)
    answers = pd.DataFrame({"id": ids, "after": answers["after"]})
    sample = pd.DataFrame({"id": ids, "after": new_test["before"]})

    (private / "answers.csv").write_text(_csv(answers), encoding="utf-8")
    (private / "sample_submission.csv").write_text(_csv(sample), encoding="utf-8")
    _zip_text(_csv(new_train), "ru_train.csv", public / "ru_train.csv.zip")
    _zip_text(_csv(new_test), "ru_test_2.csv", public / "ru_test_2.csv.zip")
    _zip_text(_csv(sample), "ru_sample_submission_2.csv", public / "ru_sample_submission_2.csv.zip")

    assert list(new_train.columns) == ["sentence_id", "token_id", "class", "before", "after"]
    assert list(new_test.columns) == ["sentence_id", "token_id", "before"]
    assert len(new_train) + len(answers) == len(old) and ids.is_unique and len(answers) > 0
    assert set(old.loc[~in_test, "sentence_id"]).isdisjoint(test_sentences), "a sentence is on both sides"


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``ru_train.csv.zip`` with 24 sentences of 2-6 tokens; small unused stage-2 test and sample zips."""
    tokens = [
        ("PLAIN", "москва", "москва"),
        ("PUNCT", ",", ","),
        ("PUNCT", '"', '"'),
        ("CARDINAL", "12", "двенадцать"),
        ("DATE", "1999 года", "тысяча девятьсот девяносто девятого года"),
        ("LATIN", "Linux", "л_trans и_trans н_trans"),
    ]
    rows = ['"sentence_id","token_id","class","before","after"']
    for sentence in range(24):
        for token in range(int(rng.integers(2, 7))):
            kind, before, after = tokens[int(rng.integers(0, len(tokens)))]
            quoted = [f'"{v.replace(chr(34), chr(34) * 2)}"' for v in (kind, before, after)]
            rows.append(f"{sentence},{token}," + ",".join(quoted))
    files = {
        "ru_train.csv": "\n".join(rows) + "\n",
        "ru_test_2.csv": '"sentence_id","token_id","before"\n0,0,"Он"\n',
        "ru_sample_submission_2.csv": '"id","after"\n"0_0","Он"\n',
    }
    for name, text in files.items():
        with zipfile.ZipFile(raw / f"{name}.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(zipfile.ZipInfo(name, (2017, 10, 1, 0, 0, 0)), text)

"""movie-review-sentiment-analysis-kernels-only: a 30% phrase-level split of train.tsv.

Facts implemented: ``train.tsv`` (from ``train.tsv.zip``, tab-separated PhraseId, SentenceId,
Phrase, Sentiment) is split with ``train_test_split(test_size=0.3, random_state=0)`` on phrases, not
grouped by sentence. Public: ``train.tsv.zip`` (all four columns), ``test.tsv.zip`` (no Sentiment)
and ``sampleSubmission.csv`` (PhraseId, Sentiment = 2). Private ``answers.csv`` (comma-separated,
all four columns).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np


def _zip_text(text: str, name: str, dst: Path) -> None:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(dst, "w") as archive:
        archive.writestr(info, text)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the phrases 70/30 (seed 0); zip the public tsv files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with zipfile.ZipFile(raw / "train.tsv.zip") as archive, archive.open("train.tsv") as member:
        old = pd.read_csv(io.BytesIO(member.read()), sep="\t")
    new_train, answers = train_test_split(old, test_size=0.3, random_state=0)
    new_test = answers.drop(columns="Sentiment")
    _zip_text(new_train.to_csv(index=False, sep="\t"), "train.tsv", public / "train.tsv.zip")
    _zip_text(new_test.to_csv(index=False, sep="\t"), "test.tsv", public / "test.tsv.zip")
    answers.to_csv(private / "answers.csv", index=False)
    answers[["PhraseId"]].assign(Sentiment=2).to_csv(public / "sampleSubmission.csv", index=False)

    assert list(old.columns) == ["PhraseId", "SentenceId", "Phrase", "Sentiment"]
    assert new_train["PhraseId"].is_unique and answers["PhraseId"].is_unique
    assert set(new_train["PhraseId"]).isdisjoint(answers["PhraseId"]) and len(new_train) + len(answers) == len(old)
    assert list(new_test.columns) == ["PhraseId", "SentenceId", "Phrase"]


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train.tsv.zip`` with 8 sentences broken into 40 phrases (sub-phrases share a SentenceId)."""
    words = [
        "a",
        "series",
        "of",
        "escapades",
        "demonstrating",
        "the",
        "adage",
        "that",
        "what",
        "is",
        "good",
        "for",
        "goose",
    ]
    rows = ["PhraseId\tSentenceId\tPhrase\tSentiment"]
    phrase_id = 1
    for sentence_id in range(1, 9):
        sentence = [str(w) for w in rng.choice(words, 6)]
        for start in range(5):
            rows.append(f"{phrase_id}\t{sentence_id}\t{' '.join(sentence[start:])}\t{rng.integers(0, 5)}")
            phrase_id += 1
    with zipfile.ZipFile(raw / "train.tsv.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("train.tsv", (2018, 3, 1, 0, 0, 0)), "\n".join(rows) + "\n")

"""billion-word-imputation: one random word is deleted from ~1% of the training sentences.

Facts implemented: a single ``numpy.random.RandomState(0)`` drives every draw, in file order. Each
line of ``train_v2.txt`` draws ``u = uniform()``; when ``u <= 0.01`` and the stripped sentence has
more than two whitespace tokens, the line goes to the test set: its newline is stripped, ``"`` is
doubled, and the token at ``randint(1, n_tokens - 1)`` is removed (never the first or last). Test ids
are 0..N-1 in file order. Public: ``train_v2.txt.zip`` (the untouched train lines) and
``test_v2.txt.zip`` (CSV ``"id","sentence"``, the sentence fully quoted and missing its word).
Private: ``test.csv`` (the full sentences) and ``sample_submission.csv`` (a copy of test_v2.txt).
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import numpy as np

TOTAL_LINES = 30_301_028  # the published prepare stops after this many lines
TEST_FRACTION = 0.01


def _zip_one(src: Path, dst: Path) -> None:
    """Deflate ``src`` into ``dst`` as its only member, with a fixed timestamp (deterministic bytes)."""
    info = zipfile.ZipInfo(src.name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(dst, "w") as archive, src.open("rb") as source, archive.open(info, "w") as sink:
        shutil.copyfileobj(source, sink, 1 << 20)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train_v2.txt line by line with the shared RandomState(0); see the module docstring."""
    rng = np.random.RandomState(0)
    train_txt, test_txt = public / "train_v2.txt", public / "test_v2.txt"
    n_train = n_test = n_lines = 0
    with (
        zipfile.ZipFile(raw / "train_v2.txt.zip") as archive,
        archive.open("train_v2.txt") as member,
        io.TextIOWrapper(member, encoding="utf-8") as old_train,
        train_txt.open("w", encoding="utf-8") as new_train,
        test_txt.open("w", encoding="utf-8") as public_test,
        (private / "test.csv").open("w", encoding="utf-8") as answers,
    ):
        public_test.write('"id","sentence"\n')
        answers.write('"id","sentence"\n')
        for line in old_train:
            if rng.uniform() <= TEST_FRACTION and len(line.strip().split()) > 2:
                sentence = line.strip().replace('"', '""')
                words = sentence.split()
                index = rng.randint(1, len(words) - 1)
                answers.write(f'{n_test},"{sentence}"\n')
                public_test.write(f'{n_test},"{" ".join(words[:index] + words[index + 1 :])}"\n')
                n_test += 1
            else:
                new_train.write(line)
                n_train += 1
            n_lines += 1
            if n_lines >= TOTAL_LINES:
                break
    shutil.copyfile(test_txt, private / "sample_submission.csv")
    _zip_one(train_txt, public / "train_v2.txt.zip")
    _zip_one(test_txt, public / "test_v2.txt.zip")
    train_txt.unlink()
    test_txt.unlink()

    import pandas as pd

    truth = pd.read_csv(private / "test.csv", dtype={"sentence": str}, keep_default_na=False)
    sample = pd.read_csv(private / "sample_submission.csv", dtype={"sentence": str}, keep_default_na=False)
    assert n_test > 0 and n_train + n_test == n_lines, "the test set is empty or rows were lost"
    assert len(truth) == len(sample) == n_test and truth["id"].tolist() == list(range(n_test))
    assert truth["id"].equals(sample["id"]), "answers and sample submission carry different ids"
    assert sorted(p.name for p in public.iterdir()) == ["test_v2.txt.zip", "train_v2.txt.zip"]


_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "that",
    "it",
    "was",
    "for",
    "on",
    "he",
    "with",
    "as",
    "his",
    "they",
    "at",
    "be",
    "this",
    "from",
    "have",
    "not",
    "by",
]


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """``train_v2.txt.zip`` holding 1,000 short sentences (a few with quotes), about 10 of which go to test."""
    lines = []
    for i in range(1000):
        words = list(rng.choice(_WORDS, int(rng.integers(1, 12))))
        if i % 37 == 0:
            words.insert(1, '"quoted"')
        lines.append(" ".join(str(w) for w in words).capitalize() + " .\n")
    info = zipfile.ZipInfo("train_v2.txt", date_time=(2014, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(raw / "train_v2.txt.zip", "w") as archive:
        archive.writestr(info, "".join(lines))

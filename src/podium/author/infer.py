"""What ``podium new`` reads from a competition's raw files: which table is the sample submission, which the train
table and which Kaggle's (unlabelled) test table; the id column(s); the targets; and each column's profile.

The sample submission is the table named like one (``sample_submission.csv``, ``sampleSubmission.csv``); its
first column is the id (``--id`` says otherwise) and its other columns are the predictions. A prediction column
that the train table has is a target of the same name; columns that are the classes of one train column (a
column of labels ``EAP, HPL, MWS`` against predictions ``EAP, HPL, MWS``) are that column one-hot. Without a
sample submission, the targets are the train columns Kaggle's test table lacks, or those ``--target`` names.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from podium.author.columns import Profile, profile
from podium.author.rawfiles import Raw
from podium.errors import UsageError
from podium.untrusted import printable

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Tables", "Targets", "find_tables", "find_targets"]

_SAMPLE = re.compile(r"sample|submission", re.IGNORECASE)
_TEST = re.compile(r"test", re.IGNORECASE)
_ID_NAME = re.compile(r"(^|_)(id|key|uid|uuid)$|Id$|ID$", re.IGNORECASE)


def _stem(path: str) -> str:
    return PurePosixPath(path.rpartition(":")[2]).name


@dataclass
class Tables:
    """The raw tables a declaration is made from, with the train table's sample and its columns' profiles."""

    train: str
    train_frame: pd.DataFrame
    profiles: dict[str, Profile]
    sample: str | None = None
    sample_frame: pd.DataFrame | None = None
    test: str | None = None
    test_frame: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)  # what was found, a line each


def _named(raw: Raw, given: str, flag: str) -> str:
    if given in raw.tables:
        return given
    matches = [t for t in raw.tables if _stem(t) == given or t.endswith(f"/{given}")]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(printable(t, 60) for t in raw.tables[:8]) or "none"
    raise UsageError(
        f"{flag} {printable(given, 120)}: no such table in the raw files (tables: {listed}). Fix: name one of them"
    )


def find_tables(raw: Raw, *, train: str | None, ids: Sequence[str], targets: Sequence[str]) -> Tables:
    """The sample submission, train and test tables of ``raw`` (``train``: the one ``--train`` names)."""
    tables = raw.tables
    samples = [t for t in tables if _SAMPLE.search(_stem(t)) and not re.search("train", _stem(t), re.I)]
    sample = None if train and targets else (samples[0] if samples else None)
    sample_frame = raw.read(sample, rows=200) if sample else None
    wanted = list(ids) + list(targets)
    if sample_frame is not None:
        wanted = wanted or list(sample_frame.columns[:1])
    if train:
        train = _named(raw, train, "--train")
    else:
        train = _pick_train(raw, [t for t in tables if t not in samples and not _TEST.search(_stem(t))], wanted)
    frame = raw.read(train)
    if frame.empty:
        raise UsageError(
            f"--from: the train table {printable(train, 200)} has no rows. Fix: name the labelled table with --train"
        )
    profiles = {str(c): profile(str(c), frame[c].tolist()) for c in frame.columns}
    tests = [t for t in tables if _TEST.search(_stem(t)) and t not in samples and t != train]
    test = next((t for t in tests if not re.search("label|solution|answer", _stem(t), re.I)), None)
    found = Tables(train, frame, profiles, sample, sample_frame, test, raw.read(test) if test else None)
    found.notes.append(
        f"train table {train}: {len(frame.columns)} columns" + (f", {len(frame)} rows read" if len(frame) else "")
    )
    if sample_frame is not None:
        found.notes.append(f"sample submission {sample}: columns {', '.join(map(str, sample_frame.columns))}")
    if test:
        found.notes.append(f"Kaggle's test table {test} (no labels): only its size and columns are used")
    return found


def _pick_train(raw: Raw, candidates: list[str], wanted: Sequence[str]) -> str:
    scored = []
    for table in candidates:
        header = set(map(str, raw.read(table, rows=0).columns))
        scored.append((sum(w in header for w in wanted), "train" in _stem(table).lower(), -len(table), table))
    if not scored:
        listed = ", ".join(printable(f, 60) for f in raw.files[:8]) or "nothing"
        raise UsageError(
            f"--from {printable(str(raw.source), 200)}: no train table (a .csv or .tsv with the targets; found "
            f"{listed}). Fix: add the labelled table, or name it with --train FILE"
        )
    return max(scored)[3]


@dataclass(frozen=True)
class Targets:
    """The id column(s), and each prediction column with the train column it is scored against."""

    ids: tuple[str, ...]
    predictions: tuple[str, ...]  # the submission's columns after the ids
    sources: tuple[str, ...]  # the train column each prediction is scored against (one-hot: the label column)
    one_hot: str | None = None  # the train column whose classes are the predictions
    how: str = ""


def find_targets(tables: Tables, *, ids: Sequence[str], targets: Sequence[str]) -> Targets:
    """The ids and targets, from the flags, the sample submission, or the tables' difference."""
    columns = list(tables.profiles)
    id_columns = tuple(ids) or _ids(tables, targets)
    for name in (*id_columns, *targets):
        if name not in columns:
            raise UsageError(
                f"'{printable(name, 80)}' is not a column of {printable(tables.train, 120)} (its columns: "
                f"{printable(', '.join(columns[:12]), 300)}). Fix: name one of them with --id or --target"
            )
    for name in id_columns:
        if not tables.profiles[name].unique:
            raise UsageError(
                f"--id {printable(name, 80)}: its values repeat in {printable(tables.train, 120)}, so rows cannot be "
                "matched on it. Fix: name a column whose every value is distinct with --id"
            )
    if targets:
        return Targets(id_columns, tuple(targets), tuple(targets), how="--target")
    if tables.sample_frame is not None:
        return _from_sample(tables, id_columns)
    if tables.test_frame is not None:
        missing = [c for c in columns if c not in set(map(str, tables.test_frame.columns)) and c not in id_columns]
        if missing:
            return Targets(id_columns, tuple(missing), tuple(missing), how=f"the train columns {tables.test} lacks")
    raise UsageError(
        f"cannot tell the target: the raw files have no sample submission and no test table to compare "
        f"{printable(tables.train, 120)} with. Fix: name it with --target COL"
    )


def _ids(tables: Tables, targets: Sequence[str]) -> tuple[str, ...]:
    if tables.sample_frame is not None and len(tables.sample_frame.columns):
        first = str(tables.sample_frame.columns[0])
        if first in tables.profiles:
            return (first,)
    named = [p.name for p in tables.profiles.values() if p.unique and _ID_NAME.search(p.name) and p.name not in targets]
    unique = [
        p.name for p in tables.profiles.values() if p.unique and p.kind in ("int", "id") and p.name not in targets
    ]
    if named or unique:
        return ((named or unique)[0],)
    raise UsageError(
        f"{printable(tables.train, 120)} has no id column (one whose every value is distinct). Fix: name one with "
        "--id COL, or add one to the table"
    )


def _from_sample(tables: Tables, ids: tuple[str, ...]) -> Targets:
    assert tables.sample_frame is not None
    predictions = [str(c) for c in tables.sample_frame.columns if str(c) not in ids]
    if predictions and all(p in tables.profiles for p in predictions):
        return Targets(
            ids, tuple(predictions), tuple(predictions), how="the sample submission's columns, found in the train table"
        )
    classes = set(predictions)
    for name, column in tables.profiles.items():
        if name not in ids and len(column.values) >= 2 and set(column.values) <= classes:
            how = f"the sample submission's columns are the classes of {name}, one-hot"
            return Targets(ids, tuple(predictions), (name,) * len(predictions), one_hot=name, how=how)
    raise UsageError(
        f"the sample submission's columns {printable(', '.join(predictions[:8]), 200)} are neither columns of "
        f"{printable(tables.train, 120)} nor the classes of one of its columns. Fix: name the target with --target COL"
    )

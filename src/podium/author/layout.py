"""How a new competition's split is drawn and which raw files follow its rows, read from the raw files.

- **Test size**: the original competition's test/(train + test) ratio, as the benchmark's authors chose theirs:
  the rows of Kaggle's test table, or the files of the test folder beside the train files, against the train
  table's rows, rounded to two decimals and at most 0.5 (a larger share would leave too little to train on); a
  share under 0.05 is written as the original test set's row count instead (the benchmark took 9,914 rows of
  new-york-city-taxi-fare-prediction's 55 million so); 0.1, the benchmark's usual share, when the raw files hold no
  test set to measure.
- **Group**: a column whose values Kaggle's test table never shares with the train table (Kaggle split whole
  groups), else a column named like an entity's id (``molecule_name``, ``patient_id``) whose values repeat: rows
  of one entity are alike, and a random split would put one entity on both sides.
- **Time**: a date column whose every test value is at or after the train table's last: Kaggle split by time.
- **Files**: a raw file per row, named by the row's id (``train_images/{id_code}.png``, ``train.zip:train/{id}``,
  ``train/{id}/geometry.xyz``), found for nine in ten of the ids sampled.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from podium.author.infer import Tables, Targets
from podium.author.rawfiles import Raw

__all__ = ["FileRule", "Split", "find_files", "find_split"]

_ENTITY = re.compile(r"(_id|_name|_key|_uid|group|patient|subject|session|user)$", re.IGNORECASE)
_DEFAULT_TEST = 0.1
_SMALLEST = 0.05  # a smaller share is written as the original test set's row count instead
_LARGEST = 0.5
_IDS_TRIED = 20


@dataclass(frozen=True)
class FileRule:
    """Raw files that follow their row: ``source`` a path template over the id column, and where each side's go."""

    source: str
    train: str
    test: str
    found: int  # of the ids tried


@dataclass(frozen=True)
class Split:
    test_size: float | int
    size_why: str
    group: str | None = None
    time: str | None = None
    column_why: str = ""


def find_files(raw: Raw, tables: Tables, targets: Targets) -> list[FileRule]:
    """The rules by which raw files follow the train table's rows (each path holds the row's id)."""
    if len(targets.ids) != 1:
        return []
    column = targets.ids[0]
    ids = [str(v) for v in tables.train_frame[column].head(_IDS_TRIED)]
    by_part: dict[str, list[str]] = defaultdict(list)
    for path in raw.files:
        if path in raw.tables:
            continue
        for part in PurePosixPath(path.replace(".zip:", ".zip/")).parts:
            by_part[part].append(path)
            by_part[PurePosixPath(part).stem].append(path)
    templates: Counter[str] = Counter()
    for value in ids:
        for path in set(by_part.get(value, ())):
            templates[_template(path, value, column)] += 1
    rules: list[FileRule] = []
    for template, count in templates.most_common():
        if count >= 0.9 * len(ids) and all(template != r.source for r in rules):
            rules.append(FileRule(template, *_targets(template), found=count))
    return rules[:4]


def _template(path: str, value: str, column: str) -> str:
    archive, sep, member = path.rpartition(".zip:")
    inside = member if sep else path
    parts = list(PurePosixPath(inside).parts)
    for i, part in enumerate(parts):
        if part == value:
            parts[i] = f"{{{column}}}"
        elif PurePosixPath(part).stem == value:
            parts[i] = f"{{{column}}}{part[len(value) :]}"
    joined = "/".join(parts)
    return f"{archive}.zip:{joined}" if sep else joined


def _targets(template: str) -> tuple[str, str]:
    """Where the train and the test side's files go: the raw path under public/, ``train`` made ``test``."""
    test = re.sub("train", "test", template, flags=re.IGNORECASE)
    if test == template:
        test = f"test/{template.rpartition(':')[2]}"
    return f"public/{template}", f"public/{test}"


def original_test_count(raw: Raw, tables: Tables, rules: Sequence[FileRule]) -> tuple[int, str] | None:
    """How many rows (or files) Kaggle's test set had, and where that was read."""
    if tables.test is not None:
        return raw.count_rows(tables.test), f"rows of {tables.test}"
    for rule in rules:
        folder = rule.test.removeprefix("public/").split("{", 1)[0]
        suffix = PurePosixPath(rule.source.rpartition(":")[2]).suffix
        if folder and folder != rule.source.split("{", 1)[0]:
            count = sum(1 for f in raw.files if f.startswith(folder) and f.endswith(suffix))
            if count:
                return count, f"files under {folder}"
    return None


def find_split(raw: Raw, tables: Tables, targets: Targets, rules: Sequence[FileRule]) -> Split:
    """The split's test size and its group or time column, each with why."""
    train_rows = raw.count_rows(tables.train)
    test = original_test_count(raw, tables, rules)
    if test is None:
        size, why = _DEFAULT_TEST, "the raw files hold no test set to measure, so the benchmark's usual 0.1"
    else:
        ratio = test[0] / (test[0] + train_rows) if test[0] + train_rows else _DEFAULT_TEST
        why = f"the original test/(train + test) ratio: {test[0]:,} {test[1]} against {train_rows:,} train rows"
        size = round(ratio, 2)
        if ratio < _SMALLEST and 0 < test[0] < train_rows:
            size, why = test[0], f"{why} is {ratio:.4f}, so the original test set's size, as a row count"
        elif size > _LARGEST:
            size, why = _LARGEST, f"{why} ({ratio:.2f}, at most {_LARGEST}: the rest is too little to train on)"
    group, time, column_why = _column(tables, targets)
    return Split(size, why, group, time, column_why)


def _column(tables: Tables, targets: Targets) -> tuple[str | None, str | None, str]:
    skip = {*targets.ids, *targets.sources}
    candidates = [p for name, p in tables.profiles.items() if name not in skip and p.distinct >= 2]
    test = tables.test_frame
    if test is not None:
        for column in candidates:
            if column.name not in test.columns:
                continue
            train_values = set(tables.train_frame[column.name])
            test_values = set(test[column.name]) - {""}
            if column.kind == "date" and test_values and min(test_values) >= max(train_values - {""}):
                return (
                    None,
                    column.name,
                    f"every {column.name} of Kaggle's test table is at or after the train table's last",
                )
            repeats = column.kind in ("label", "id", "int") and column.distinct <= column.rows / 2
            if repeats and len(test_values) >= 2 and test_values.isdisjoint(train_values):
                why = f"Kaggle's test table shares no {column.name} with the train table: it split whole groups"
                return column.name, None, why
    for column in candidates:
        if (
            _ENTITY.search(column.name)
            and column.kind in ("id", "label", "int")
            and 10 <= column.distinct < column.rows / 2
        ):
            per = column.rows / column.distinct
            why = f"about {per:.0f} rows per {column.name}: rows of one are alike, so whole ones go to one side"
            return column.name, None, why
    return None, None, ""

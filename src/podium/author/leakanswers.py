"""The private answers as the leak scan compares them: one key per test row, each target, a bounded sample of rows.

A key is the row's id (its id columns joined when there are several) written as :func:`canon_id` writes it, so
that ``00012`` in one file and ``12`` in another name the same row. The measures look at a sample of at most
:data:`MAX_ROWS` test rows (seeded, kept in file order), so a check of a large competition stays bounded; the
joins on ids use every row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from podium.author.leakstats import Target, canon
from podium.competition import Competition
from podium.grading.table import Frame, read_csv

__all__ = ["MAX_ROWS", "MAX_TARGETS", "TEXT_KINDS", "Answers", "canon_id", "canonical", "read_answers", "text_answers"]

#: The test rows the measures look at, at most (a seeded sample, in file order).
MAX_ROWS = 5_000
#: The answer columns measured, at most (the first ones: a one-hot answer may have hundreds).
MAX_TARGETS = 12
#: Answer kinds that only equality and the content searches measure.
TEXT_KINDS = frozenset({"text", "rle", "tokens", "boxes", "id"})
_DIGITS = re.compile(r"[+-]?\d+")


def canon_id(value: str) -> str:
    """An id as compared across files: trimmed, and a whole number without its leading zeros."""
    text = str(value).strip()
    return str(int(text)) if _DIGITS.fullmatch(text) and len(text) < 19 else text


@dataclass(frozen=True)
class Answers:
    """The answers of the test rows: keys, targets and the cells as written, for the sampled rows."""

    competition: Competition
    keys: tuple[str, ...]  # every test row's key, in the answers' order
    rows: tuple[int, ...]  # the sampled rows (indices into ``keys``)
    targets: tuple[Target, ...]  # over the sampled rows
    cells: dict[str, tuple[str, ...]]  # each answer column as written, over the sampled rows
    frame: Frame  # every answer column as text

    @property
    def single(self) -> bool:
        return len(self.competition.id_columns) == 1

    @property
    def key_set(self) -> frozenset[str]:
        return frozenset(self.keys)

    def sampled_keys(self) -> list[str]:
        return [self.keys[i] for i in self.rows]

    def kind(self, column: str) -> str:
        return self.competition.answer_column(column).kind

    def aligned(self, values_by_key: dict[str, str]) -> list[str | None]:
        """A feature over the sampled rows from a value per key (None where a row's key has none)."""
        return [values_by_key.get(self.keys[i]) for i in self.rows]


def text_answers(competition: Competition, path: Path) -> Frame:
    """The answers file at ``path`` as text columns (through the competition's ``load_answers`` where it has one)."""
    load = competition.hook("load_answers")
    if load is not None:
        frame: Frame = load(path)
        return Frame({k: np.array([str(v) for v in frame[k]], dtype=object) for k in frame.names}, frame.n_rows)
    return read_csv(path, what="answers")


def _key(row: Sequence[object]) -> str:
    return "\x1f".join(canon_id(str(v)) for v in row)


def read_answers(competition: Competition, prepared: Path, *, seed: int = 0) -> Answers:
    """The prepared answers of ``competition`` (under ``prepared/private``) as the scan compares them."""
    frame = text_answers(competition, prepared / "private" / competition.answers)
    columns = [frame[c] for c in competition.id_columns]
    keys = tuple(_key(row) for row in zip(*columns, strict=True))
    n = len(keys)
    rows = tuple(range(n)) if n <= MAX_ROWS else tuple(sorted(np.random.default_rng(seed).choice(n, MAX_ROWS, False)))
    names = list(dict.fromkeys(a for _, a in competition.targets))[:MAX_TARGETS]
    cells = {name: tuple(str(frame[name][i]) for i in rows) for name in names if name in frame.names}
    targets = tuple(
        Target.of(name, values, competition.answer_column(name).kind in TEXT_KINDS) for name, values in cells.items()
    )
    return Answers(competition, keys, tuple(int(i) for i in rows), targets, cells, frame)


def canonical(values: Sequence[str | None]) -> list[str | None]:
    """A feature's values as the measures compare them (None kept)."""
    return [None if v is None else canon(v) for v in values]

"""HMS: answers hold raw expert vote counts, several rows may share an eeg_id."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame


def _classes(competition: Competition) -> list[str]:
    return [c.name for c in competition.columns if c.name not in competition.id_columns]


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    """Vote counts (at least one vote per row) with some eeg_ids repeated over consecutive rows."""
    ids = np.sort(rng.integers(1, max(2, n * 2 // 3), n))
    votes = rng.integers(0, 4, (n, len(_classes(competition))))
    votes[votes.sum(axis=1) == 0, 0] = 1
    columns = {"eeg_id": ids.astype(str).astype(object)}
    for j, name in enumerate(_classes(competition)):
        columns[name] = votes[:, j].astype(str).astype(object)
    return Frame(columns, n)


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    """The vote distributions themselves: counts divided by each row's total."""
    names = _classes(competition)
    votes = np.column_stack([answers[c].astype(float) for c in names])
    shares = votes / votes.sum(axis=1, keepdims=True)
    columns = {"eeg_id": answers["eeg_id"]}
    for j, name in enumerate(names):
        columns[name] = np.array([repr(float(v)) for v in shares[:, j]], dtype=object)
    return Frame(columns, answers.n_rows)

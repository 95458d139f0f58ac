"""H&M: answers list each customer's purchases (repeats possible); the sample covers every customer."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame

_ARTICLES = [str(706016001 + 7919 * i) for i in range(30)]  # int-formatted ids, as in the answers


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    """Purchases in transaction order: 1-16 articles per customer, a few bought twice."""
    rows = []
    for _ in range(n):
        bought = list(rng.choice(_ARTICLES, int(rng.integers(1, 17))))
        rows.append(" ".join(bought))
    ids = np.array([f"{i:064x}" for i in range(1, n + 1)], dtype=object)
    return Frame({"customer_id": ids, "prediction": np.array(rows, dtype=object)}, n)


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    """Each customer's distinct purchases in first-bought order, at most 12."""
    best = [" ".join(list(dict.fromkeys(row.split()))[:12]) for row in answers["prediction"]]
    return Frame({"customer_id": answers["customer_id"], "prediction": np.array(best, dtype=object)}, answers.n_rows)


def sample_submission(competition: Competition, answers: Frame) -> Frame:
    """The fixed popular list for every answer customer, then for two customers who bought nothing."""
    ids = np.concatenate([answers["customer_id"], np.array([f"{0xFFFF - i:064x}" for i in range(2)], dtype=object)])
    default = str(competition.column("prediction").options["default"])
    return Frame({"customer_id": ids, "prediction": np.full(len(ids), default, dtype=object)}, len(ids))

"""AI4Code: the sample submission lists each notebook's own cells in another order."""

from __future__ import annotations

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame


def sample_submission(competition: Competition, answers: Frame) -> Frame:
    """Each notebook's true cell order rotated by one cell: a valid permutation, not the answer."""
    rotated = np.array([" ".join(np.roll(cells.split(), 1)) for cells in answers["cell_order"]], dtype=object)
    return Frame({"id": answers["id"], "cell_order": rotated}, answers.n_rows)

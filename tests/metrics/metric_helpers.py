"""What the metric tests share: the hypothesis settings of their property tests, and text cells."""

from __future__ import annotations

import numpy as np
from hypothesis import settings

#: Property tests here run 50 examples each, without a deadline (2 shared cores).
FAST = settings(max_examples=50, deadline=None)


def cells(*values: str) -> np.ndarray:
    """Text cells as the grader hands them to a metric: an object array of str."""
    return np.array(values, dtype=object)

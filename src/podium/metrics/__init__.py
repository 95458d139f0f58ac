"""The metric library: plain functions on aligned numpy arrays, one table of their directions.

Every metric is ``fn(y_true, y_pred, **options) -> float``. The arrays are already aligned row by
row by the grader; a 2-D array holds one column per target. Functions live in family modules
(``classification``, ``fscore``, ``regression``, ``ranking``, ``text``, ``masks``, ``detection``,
``detection3d``) that import
only numpy at module level, so grading one competition imports only what its metric needs.

A metric raises :class:`podium.errors.InvalidSubmissionError` when a prediction's content is
malformed in a way only the metric can see (an RLE with overlapping runs, a box string whose token
count is wrong); any other exception is a bug and propagates as such.
"""

from __future__ import annotations

from podium.metrics.table import METRICS, Metric, get_metric

__all__ = ["METRICS", "Metric", "get_metric"]

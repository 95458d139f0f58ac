"""Reports: run groups and MLE-bench grading reports turned into the benchmark's tables.

- :mod:`~podium.report.aggregate`: the published MLE-bench aggregation (seeds, percentages, mean,
  SEM, 95% interval), reproduced exactly, and podium's own view beside it;
- :mod:`~podium.report.inputs`: what `podium report` reads, pooled by label;
- :mod:`~podium.report.build`: the report's data over every split; :mod:`~podium.report.render`:
  text, Markdown, JSON;
- :mod:`~podium.report.group`: the run group's report that `podium run` writes after a batch.
"""

from __future__ import annotations

from podium.report.aggregate import AggregationError, published, t_quantile
from podium.report.build import build_report
from podium.report.group import aggregate, corrected_rows, definitions, write_report
from podium.report.inputs import LabelInput, load_inputs
from podium.report.render import render

__all__ = [
    "AggregationError",
    "LabelInput",
    "aggregate",
    "build_report",
    "corrected_rows",
    "definitions",
    "load_inputs",
    "published",
    "render",
    "t_quantile",
    "write_report",
]

"""`podium report --format csv`: one row per run, every label, with the columns of :data:`COLUMNS`.

The rows are the report's competitions (``labels.LABEL.competitions``) flattened: for a
spreadsheet or pandas (``pd.read_csv``), without reading podium's JSON.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from podium.report.sections import RUN_KEYS

__all__ = ["COLUMNS", "COMPETITION_KEYS", "run_rows", "runs_csv"]

#: The competition's keys every row repeats.
COMPETITION_KEYS = ("competition_id", "competition_version", "metric", "higher_is_better", "leaderboard")
#: The columns, in order: the label, the competition and its metric, then the run's keys.
COLUMNS = ("label", *COMPETITION_KEYS, *RUN_KEYS)


def run_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every run of the report as one flat mapping over :data:`COLUMNS`."""
    rows = []
    for label, data in report["labels"].items():
        for comp in data["competitions"]:
            shared = {
                key: comp[key]
                for key in ("competition_id", "competition_version", "metric", "higher_is_better", "leaderboard")
            }
            for run in comp["runs"]:
                rows.append({"label": label, **shared, **run})
    return rows


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):  # the audit's reasons
        return "; ".join(str(v) for v in value)
    return "" if value is None else value


def runs_csv(report: Mapping[str, Any]) -> str:
    """The runs as CSV text (a header, then one row per run; empty cells where the input does not say)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in run_rows(report):
        writer.writerow([_cell(row.get(column)) for column in COLUMNS])
    return out.getvalue()

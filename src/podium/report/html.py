"""`podium report --format html`: one self-contained file (styles, SVG figures and the report's JSON
inline; nothing fetched when it opens).

Every number shown from the report carries ``data-json-path`` (a JSON pointer, RFC 6901, into the
report's JSON, which the file also holds in ``<script id="podium-report">``) and ``data-value``
(the number itself), so a reader or a test can check any cell against the data it came from.
Links to run folders are relative to the folder the file is written to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any

from podium.report.aggregate import METRICS, RATE_KEYS
from podium.report.cutoff import cutoff_lines
from podium.report.figures import (
    cost_figure,
    familiarity_figure,
    pass_at_k_figure,
    time_scaling_figure,
)
from podium.report.html_rows import (
    _COST,
    _RUN_HEAD,
    _comparisons,
    _cost_rows,
    _familiarity,
    _headline,
    _heatmap,
    _pass_rows,
    _runs,
    _time,
    _versions,
    pointer,
    version_anchor,
)

__all__ = ["html_pieces", "html_report", "pointer", "version_anchor"]


def _script_json(report: Mapping[str, Any]) -> str:
    """The report's JSON, safe inside a <script> element."""
    return json.dumps(report).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def html_report(report: Mapping[str, Any], *, links_from: str | None = None) -> str:
    """The report as one HTML file (see the module docstring)."""
    return "".join(html_pieces(report, links_from=links_from))


def html_pieces(
    report: Mapping[str, Any], *, links_from: str | None = None, run_link: Callable[[str], str] | None = None
) -> Iterator[str]:
    """The HTML file in pieces, in order (what :func:`html_report` joins; a writer can stream them). ``run_link``
    gives a run's link from its folder instead (a bundle links each run to its own page)."""
    import jinja2

    template_text = (resources.files("podium.report") / "templates" / "report.html.j2").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    options = "missing runs padded as failures" if report["pad_missing"] else "complete seeds only"
    seeds = "every seed" if report["seeds"] == -1 else f"the first {report['seeds']} seed(s)"
    pass_ks, pass_rows = _pass_rows(report)
    time_hours, time_rows = _time(report)
    notes = [f"{label}: {note}" for label, data in report["labels"].items() for note in data["notes"]]
    inputs = [
        f"{label} ({d['kind']}, {d['runs']} runs): {', '.join(d['paths'])}" for label, d in report["labels"].items()
    ]
    return environment.from_string(template_text).generate(
        report=report,
        options=f"{options}; {seeds}",
        cutoff=cutoff_lines(report),
        rate_names=[METRICS[k] for k in RATE_KEYS],
        headline=_headline(report),
        pass_svg=pass_at_k_figure(report),
        pass_ks=pass_ks,
        pass_rows=pass_rows,
        comparisons=_comparisons(report),
        time_svg=time_scaling_figure(report.get("time_scaling")),
        time_hours=time_hours,
        time_rows=time_rows,
        heatmap_svg=_heatmap(report),
        versions=_versions(report),
        cost_svg=cost_figure(report),
        familiarity=report.get("familiarity"),
        familiarity_svg=familiarity_figure(report.get("familiarity")),
        familiarity_labels=_familiarity(report),
        cost_head=["label", *(words for _, words, _ in _COST)],
        cost_rows=_cost_rows(report),
        run_head=_RUN_HEAD,
        run_rows=_runs(report, links_from, run_link),
        notes=notes,
        inputs=inputs,
        report_json=_script_json(report),
    )

"""The report's sections beyond the published table as text (100 columns) and Markdown: pass@k, the
paired comparisons, cost, time scaling and each competition's runs; and the table helpers both
formats share.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from podium.report.sections import pass_at_k_blocks
from podium.untrusted import printable

__all__ = ["RUN_HEAD", "WIDTH", "md_row", "md_sections", "text_sections", "text_table"]

WIDTH = 100
#: At most this many k columns in a pass@k table (1..6 and the largest k when there are more).
_MAX_K = 7


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widths; the first column left-aligned, the rest right-aligned.

    A first cell too long for 100 columns goes on its own line above its row. Cells are escaped (a name cannot
    start a line of its own).
    """
    header, rows = [printable(c) for c in header], [[printable(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(1, len(header))]
    rest = sum(w + 2 for w in widths)
    first = min(max(len(r[0]) for r in [header, *rows]), max(8, WIDTH - rest))

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(first)] + [c.rjust(w) for c, w in zip(row[1:], widths, strict=True)]
        return "  ".join(cells).rstrip()

    out = [line(header)]
    for row in rows:
        if len(row[0]) > first:
            out.append(row[0])
            row = ["", *row[1:]]
        out.append(line(row))
    return out


def md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(printable(c).replace("|", "\\|") for c in cells) + " |"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [md_row(header), md_row(["---"] * len(header)), *(md_row(r) for r in rows)]


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _p(value: float) -> str:
    return f"{value:.3g}" if value >= 0.001 else "<0.001"


def _shown_k(ks: Sequence[int]) -> list[int]:
    return list(ks) if len(ks) <= _MAX_K else [*ks[: _MAX_K - 1], ks[-1]]


def _pass_rows(report: Mapping[str, Any], flag: str) -> tuple[list[int], list[list[str]]]:
    rows: list[list[str]] = []
    shown: list[int] = []
    for label, key, block in pass_at_k_blocks(report):
        ks = _shown_k(block["k"])
        shown = ks if len(ks) > len(shown) else shown
        values = dict(zip(block["k"], block["curves"][flag], strict=True))
        rows.append([label, report["splits"][key]["title"], *(_num(values.get(k)) for k in ks)])
    width = len(shown)
    return shown, [r + ["-"] * (2 + width - len(r)) for r in rows]


def _comparison_rows(comparison: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for what, result in comparison["values"].items():
        if not result["competitions"]:
            continue
        boot, sign = result["bootstrap"], result["sign_test"]
        rows.append(
            [
                {"any_medal": "any medal %", "percentile": "percentile %"}.get(what, what),
                _num(result["mean_a"]),
                _num(result["mean_b"]),
                f"{result['mean_difference']:+.1f}",
                f"[{boot['lower']:+.1f}, {boot['upper']:+.1f}]",
                f"{sign['wins']}/{sign['losses']}/{sign['ties']}",
                _p(sign["p"]),
                _p(result["permutation"]["p"]),
            ]
        )
    return rows


#: The columns of the table of every run (Markdown; the HTML file adds the run's folder).
RUN_HEAD = [
    "competition",
    "metric",
    "label",
    "seed",
    "score",
    "percentile",
    "rank",
    "medal",
    "runtime",
    "exit",
    "failure",
]
_COMPARISON_HEAD = ["value", "A", "B", "A-B", "95% bootstrap", "A>B/A<B/=", "sign p", "perm. p"]
_COST_HEAD = ["label", "runs", "medals", "LLM calls", "tokens in", "tokens out", "USD", "USD/medal", "GPU-h", "hours"]


def _cost_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for label, data in report["labels"].items():
        c = data["cost"]
        rows.append(
            [
                label,
                str(c["runs"]),
                str(c["medals"]),
                _count(c["llm_calls"]),
                _count(c["input_tokens"]),
                _count(c["output_tokens"]),
                _num(c["cost_usd"], 2),
                _num(c["cost_usd_per_medal"], 2),
                _num(c["gpu_hours"], 2),
                _num(c["runtime_hours"], 2),
            ]
        )
    return rows


def _time_rows(scaling: Mapping[str, Any], key: str) -> tuple[list[str], list[list[str]]]:
    hours = scaling["hours"]
    head = ["label", *(f"{h:g}h" if h >= 1 else f"{h * 60:.3g}m" for h in hours)]
    rows = [[label, *(_num(point[key]) for point in data["points"])] for label, data in scaling["labels"].items()]
    return head, rows


def _scores(runs: Sequence[Mapping[str, Any]]) -> str:
    def one(run: Mapping[str, Any]) -> str:
        if run["score"] is None:
            return "x" if run["failure_kind"] == "harness" else "-"
        return f"{run['score']:.4g}" + {"gold": "G", "silver": "S", "bronze": "B"}.get(run["medal"] or "", "")

    return " ".join(one(r) for r in runs)


def _direction(higher: bool | None) -> str:
    return "" if higher is None else " (higher)" if higher else " (lower)"


def text_sections(report: Mapping[str, Any]) -> list[str]:
    """pass@k, comparisons, cost, time scaling and the competitions, as text lines."""
    lines: list[str] = []
    ks, rows = _pass_rows(report, "any_medal")
    if rows:
        lines += ["", "== pass@k: any medal (% of the split's competitions, unbiased estimator) =="]
        lines += text_table(["label", "split", *(f"k={k}" for k in ks)], rows)
    for comparison in report.get("comparisons") or []:
        rows = _comparison_rows(comparison)
        lines += ["", *textwrap.wrap(f"== A = {comparison['a']} against B = {comparison['b']} ==", WIDTH)]
        if not rows:
            lines.append("no competition that both ran")
            continue
        lines += textwrap.wrap(
            f"On the {comparison['competitions']} competitions both ran: per-competition means, their mean "
            "difference, a bootstrap over competitions and seeds, the sign test and a paired permutation test.",
            WIDTH,
        )
        lines += text_table(_COMPARISON_HEAD, rows)
    lines += ["", "== Cost =="]
    lines += text_table(_COST_HEAD, _cost_rows(report))
    scaling = report.get("time_scaling")
    if scaling and scaling["labels"]:
        lines += ["", "== Time scaling: any medal (% of runs) with the best-so-far submission =="]
        lines += text_table(*_time_rows(scaling, "any_medal_percentage"))
    lines += ["", "== Competitions: each seed's score (G/S/B: medal; -: no valid submission; x: harness failure) =="]
    for label, data in report["labels"].items():
        rows = []
        for comp in data["competitions"]:
            name = f"{comp['competition_id']}@{comp['competition_version']}"
            metric = f"{comp['metric'] or '?'}{_direction(comp['higher_is_better'])}"
            rows.append([name, metric, _num(_pct(comp["mean_percentile"])), _scores(comp["runs"])])
        if rows:
            lines += ["", f"-- {label}", *text_table(["competition", "metric", "percentile", "scores"], rows)]
    return lines


def _pct(value: float | None) -> float | None:
    return None if value is None else value * 100


def md_sections(report: Mapping[str, Any]) -> list[str]:
    """pass@k, comparisons, cost, time scaling and every run, as Markdown lines."""
    lines: list[str] = []
    for flag, words in (("any_medal", "any medal"), ("above_median", "above median")):
        ks, rows = _pass_rows(report, flag)
        if rows:
            lines += ["", f"## pass@k: {words}", "", "% of the split's competitions (unbiased estimator).", ""]
            lines += _md_table(["label", "split", *(f"k={k}" for k in ks)], rows)
    for comparison in report.get("comparisons") or []:
        lines += ["", f"## A = {comparison['a']} against B = {comparison['b']}", ""]
        rows = _comparison_rows(comparison)
        if not rows:
            lines.append("No competition that both ran.")
            continue
        lines += [
            f"On the {comparison['competitions']} competitions both ran: the mean over competitions of each "
            "label's mean over its runs, their difference, a 95% bootstrap interval (competitions, then seeds "
            "within them, resampled), the exact sign test (competitions where A is better / worse / equal) and "
            "a paired permutation test.",
            "",
            *_md_table(_COMPARISON_HEAD, rows),
        ]
    lines += ["", "## Cost", "", *_md_table(_COST_HEAD, _cost_rows(report))]
    scaling = report.get("time_scaling")
    if scaling and scaling["labels"]:
        head, rows = _time_rows(scaling, "any_medal_percentage")
        lines += ["", "## Time scaling", "", "Any medal (% of runs) with the best-so-far submission.", ""]
        lines += _md_table(head, rows)
    lines += ["", "## Runs", ""]
    head = RUN_HEAD
    rows = []
    for label, data in report["labels"].items():
        for comp in data["competitions"]:
            for run in comp["runs"]:
                rows.append(
                    [
                        f"{comp['competition_id']}@{comp['competition_version']}",
                        f"{comp['metric'] or '?'}{_direction(comp['higher_is_better'])}",
                        label,
                        "-" if run["seed"] is None else str(run["seed"]),
                        "-" if run["score"] is None else f"{run['score']:.6g}",
                        _num(_pct(run["percentile"])),
                        "-" if run["rank"] is None else f"{run['rank']}/{run['n_teams']}",
                        run["medal"] or "-",
                        "-" if run["runtime_s"] is None else f"{run['runtime_s']:.1f}s",
                        "-" if run["exit_code"] is None else str(run["exit_code"]),
                        "-" if not run["failure"] else f"{run['failure_kind']}: {run['failure']}",
                    ]
                )
    lines += _md_table(head, rows)
    return lines

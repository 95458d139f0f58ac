"""`podium report` as text (fits 100 columns), Markdown, JSON, CSV (one row per run) or HTML, from
:func:`podium.report.build.build_report`."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from typing import Any

from podium.errors import UsageError
from podium.report.aggregate import METRICS, RATE_KEYS
from podium.report.audited import audit_lines
from podium.report.compute import profile_lines
from podium.report.contamination import familiarity_text
from podium.report.cutoff import cutoff_lines
from podium.report.readings import READINGS
from podium.report.tables import WIDTH, md_row, md_sections, text_sections, text_table
from podium.report.training import sealed_training_lines
from podium.untrusted import printable

__all__ = ["FORMATS", "render"]

_SHORT = {
    "submission_exists_percentage": "made sub.",
    "valid_submissions_percentage": "valid",
    "above_median_percentage": ">median",
    "gold_medal_percentage": "gold",
    "silver_medal_percentage": "silver",
    "bronze_medal_percentage": "bronze",
    "any_medal_percentage": "any medal",
}


FORMATS = ("text", "md", "json", "csv", "html")


def render(report: Mapping[str, Any], fmt: str, *, links_from: str | None = None) -> str:
    """The report as ``text`` (fits 100 columns), ``md``, ``json``, ``csv`` or ``html`` (one file that
    needs no network; its links to run folders are relative to the folder ``links_from``)."""
    if fmt == "json":
        return json.dumps(report) + "\n"  # one line: the C encoder (indent= would take the slow one)
    if fmt == "md":
        return _visible(_markdown(report))
    if fmt == "text":
        return _visible(_text(report))
    if fmt == "csv":
        from podium.report.flat import runs_csv

        return runs_csv(report)
    if fmt == "html":
        from podium.report.html import html_report

        return html_report(report, links_from=links_from)
    raise UsageError(f"--format {fmt}: pass one of {', '.join(FORMATS)}")


def _visible(text: str) -> str:
    """The report's lines with every control character in them escaped (a name holding a terminal escape or a
    carriage return cannot rewrite a line); the names that could hold a newline are escaped where they are put."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _pm(metric: Mapping[str, Any]) -> str:
    return f"{metric['mean']:.1f}±{metric['standard_error']:.1f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"


def _definitions_lines(report: Mapping[str, Any], key: str, which: str, prefix: str, width: int = WIDTH) -> list[str]:
    """The definitions the split's numbers were graded by: one line if the labels share them, else one per label."""
    per_label = {}
    for label, data in report["labels"].items():
        cell = data["splits"][key]
        block = cell["corrected"] if which == "corrected" else cell
        if block:
            per_label[label] = block["definitions"]
    if not per_label:
        return []
    if len(set(per_label.values())) == 1:
        return textwrap.wrap(f"{prefix}{next(iter(per_label.values()))}", width, subsequent_indent="  ")
    lines = [f"{prefix}per label:"]
    for label, words in per_label.items():
        lines += textwrap.wrap(f"{label}: {words}", width, initial_indent="  ", subsequent_indent="    ")
    return lines


def _text(report: Mapping[str, Any]) -> str:
    labels = report["labels"]
    options = "missing runs padded as failures" if report["pad_missing"] else "complete seeds only"
    seeds = "every seed" if report["seeds"] == -1 else f"the first {report['seeds']} seed(s)"
    lines = textwrap.wrap(
        f"podium report: {len(labels)} label(s), the published MLE-bench aggregation (seed i = each competition's "
        f"i-th report; {options}; {seeds}). Cells: % of the split's competitions, mean±SEM over seeds.",
        WIDTH,
    )
    lines += cutoff_lines(report, WIDTH)
    empty = []
    for key, split in report["splits"].items():
        cells = {label: data["splits"][key] for label, data in labels.items()}
        if len(report["splits"]) > 1 and all(not cell["runs"] for cell in cells.values()):
            empty.append(split["title"])
            continue
        lines += ["", f"== {split['title']}: {split['competitions']} competitions =="]
        lines += profile_lines(report, [label for label, cell in cells.items() if cell["runs"]])
        lines += _readings_lines(cells, split["competitions"])
        lines += [""]
        lines += _definitions_lines(report, key, "published", "Published rules; definitions: ")
        lines += _published_text(cells, "published")
        if any(c["corrected"] for c in cells.values()):
            lines += [""]
            lines += _definitions_lines(
                report,
                key,
                "corrected",
                "Corrected (a later version changes only the metric; not comparable with the leaderboard): ",
            )
            lines += _published_text({k: c for k, c in cells.items() if c["corrected"]}, "corrected")
        lines += _headline_text(cells)
    if empty:
        lines += ["", *textwrap.wrap(f"No runs in split(s): {', '.join(empty)}.", WIDTH)]
    lines += text_sections(report)
    lines += audit_lines(report, width=WIDTH)
    lines += sealed_training_lines(report)
    lines += familiarity_text(report.get("familiarity"), WIDTH)
    notes = [(label, note) for label, data in labels.items() for note in data["notes"]]
    if notes:
        lines += ["", "Notes:"]
        for label, note in notes:
            lines += textwrap.wrap(f"{label}: {note}", WIDTH, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"


def _reading_cell(block: Mapping[str, Any], markdown: bool) -> str:
    if "error" in block:
        return "-"
    metric = block["metrics"]["any_medal_percentage"]
    if markdown:
        return _md_metric(metric, "ci_lower", "ci_upper")
    return _pm(metric)


def _readings_lines(cells: Mapping[str, Mapping[str, Any]], competitions: int, *, markdown: bool = False) -> list[str]:
    """The three headline readings of any medal side by side, then what each left out or read otherwise."""
    shown = {label: cell["readings"] for label, cell in cells.items() if cell["runs"]}
    if not shown:
        return []
    first = next(iter(shown.values()))
    kept = first["without_leaks"]["competitions"]
    header = ["label", *READINGS.values()]
    header[-1] += f" ({kept} of {competitions})"
    rows = [[label, *(_reading_cell(r[key], markdown) for key in READINGS)] for label, r in shown.items()]
    intro = (
        "Any medal (% of the split's competitions; mean ± SEM over seeds"
        + (" [95% interval]" if markdown else "")
        + ") by the published definitions, by podium's corrected ones, and by the published ones without "
        "the competitions whose data has a known leak:"
    )
    lines = [intro, ""] if markdown else textwrap.wrap(intro, WIDTH)
    lines += (
        [md_row(header), md_row(["---"] * len(header)), *map(md_row, rows)] if markdown else text_table(header, rows)
    )
    notes = _readings_notes(first["without_leaks"]["excluded"], shown, cells)
    if markdown:
        return [*lines, "", *(f"- {note}" for note in notes)]
    for note in notes:
        lines += textwrap.wrap(note, WIDTH, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    return lines


def _readings_notes(
    excluded: list[Mapping[str, Any]], shown: Mapping[str, Mapping[str, Any]], cells: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """What the readings left out or read otherwise, in sentences: the leaky competitions with their reasons,
    and per label the competitions its corrected reading graded by a later version or could not."""
    notes = [f"Left out for a known leak: {e['competition_id']}: {e['reason']}" for e in excluded]
    if not excluded:
        notes.append("Left out for a known leak: none (no competition of this split has one).")
    for label, r in shown.items():
        corrected = r["corrected"]
        if corrected["changed"]:
            notes.append(f"{label}: the corrected reading grades {', '.join(corrected['changed'])}.")
        if corrected["not_newest"]:
            stay = [
                f"{m['competition_id']}@{m['read_at']} ({m['reason']}: {m['fix']})" for m in corrected["not_newest"]
            ]
            notes.append(f"{label}: the corrected reading keeps {'; '.join(stay)}.")
        if r["published"]["not_version_1"]:
            kept = ", ".join(r["published"]["not_version_1"])
            notes.append(f"{label}: no version-1 grade for {kept} (a version with other data): read as graded.")
        for key, title in READINGS.items():
            if "error" in r[key] and cells[label]["runs"]:
                notes.append(f"{label}: {title}: not aggregated: {r[key]['error']}")
    return notes


def _headline_text(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Any medal with the published interval beside podium's view (failure counts, t interval)."""
    header = ["label", "any medal", "95% interval", "runs", "harness", "agent", "padded", "podium", "t interval"]
    rows = []
    for label, cell in cells.items():
        pub, own = cell["published"], cell["podium"]
        if "error" in pub:
            continue
        any_medal = pub["metrics"]["any_medal_percentage"]
        row = [label, f"{any_medal['mean']:.1f}", _interval(any_medal["ci_lower"], any_medal["ci_upper"])]
        if own is None:
            row += ["-"] * 6
        else:
            row += [str(own["runs"]), str(own["harness_failures"]), str(own["agent_failures"]), str(own["padded"])]
            if own["metrics"] is None:  # every run was the harness's failure: nothing to rate
                row += ["-", "-"]
            else:
                mine = own["metrics"]["any_medal_percentage"]
                row += [f"{mine['mean']:.1f}", _interval(mine["t_lower"], mine["t_upper"])]
        rows.append(row)
    if not rows:
        return []
    intro = (
        "Any medal: the published 95% interval (mean ± 1.96 SEM); podium's view: runs, failures of the harness "
        "and of the agent, missing runs padded, and the rate without the harness's failures with a Student t "
        "interval (n-1 df):"
    )
    return ["", *textwrap.wrap(intro, WIDTH), *text_table(header, rows)]


def _published_text(cells: Mapping[str, Mapping[str, Any]], which: str) -> list[str]:
    header = ["label", "seeds", *(_SHORT[k] for k in RATE_KEYS)]
    rows, errors = [], []
    for label, cell in cells.items():
        block = cell[which]
        if "error" in block:
            errors.append((label, block["error"] if cell["runs"] else "no runs of this split"))
            continue
        rows.append([label, str(block["num_seeds_averaged"]), *(_pm(block["metrics"][k]) for k in RATE_KEYS)])
    lines = text_table(header, rows) if rows else []
    for label, error in errors:  # at most three lines each here; --format json has the whole message
        wrapped = textwrap.wrap(f"{label}: not aggregated: {error}", WIDTH, subsequent_indent="  ")
        lines += wrapped if len(wrapped) <= 3 else [*wrapped[:2], wrapped[2][: WIDTH - 4] + " ..."]
    return lines


def _md_metric(metric: Mapping[str, Any], low: str, high: str) -> str:
    if metric.get("standard_error") is None:
        return f"{metric['mean']:.1f}"
    return f"{metric['mean']:.1f} ± {metric['standard_error']:.1f} {_interval(metric[low], metric[high])}"


def _markdown(report: Mapping[str, Any]) -> str:
    labels = report["labels"]
    options = "`--pad-missing` (missing runs count as failures)" if report["pad_missing"] else "complete seeds only"
    seeds = "every seed" if report["seeds"] == -1 else f"the first {report['seeds']} seed(s)"
    lines = [
        "# podium report",
        "",
        f"Numbers by {report['aggregation']}. Options: {options}; {seeds}.",
        "Cells: % of the split's competitions, mean ± SEM over seeds [95% interval].",
        *(f"\n{line}" for line in cutoff_lines(report)),
    ]
    rate_head = [METRICS[k] for k in RATE_KEYS]
    for key, split in report["splits"].items():
        cells = {label: data["splits"][key] for label, data in labels.items()}
        lines += ["", f"## {split['title']}: {split['competitions']} competitions", ""]
        compute = profile_lines(report, [label for label, cell in cells.items() if cell["runs"]])
        lines += [f"- {line.strip()}" if line.startswith("  ") else line for line in compute] + (
            [""] if compute else []
        )
        lines += _readings_lines(cells, split["competitions"], markdown=True)
        lines += [""]
        lines += _definitions_lines(report, key, "published", "Published rules; definitions: ", 10**6)
        lines += ["", md_row(["label", "seeds", *rate_head]), md_row(["---"] * (2 + len(rate_head)))]
        errors = []
        for label, cell in cells.items():
            pub = cell["published"]
            if "error" in pub:
                errors.append(f"- {label}: not aggregated: {pub['error']}")
                continue
            values = [_md_metric(pub["metrics"][k], "ci_lower", "ci_upper") for k in RATE_KEYS]
            lines.append(md_row([label, str(pub["num_seeds_averaged"]), *values]))
        if errors:
            lines += ["", *errors]
        corrected = {label: c["corrected"] for label, c in cells.items() if c["corrected"]}
        if corrected:
            lines += [
                "",
                *_definitions_lines(
                    report,
                    key,
                    "corrected",
                    "Corrected (a later version that changes only the metric; not comparable with the leaderboard): ",
                    10**6,
                ),
                "",
            ]
            lines += [md_row(["label", "seeds", *rate_head]), md_row(["---"] * (2 + len(rate_head)))]
            for label, block in corrected.items():
                values = [_md_metric(block["metrics"][k], "ci_lower", "ci_upper") for k in RATE_KEYS]
                lines.append(md_row([label, str(block["num_seeds_averaged"]), *values]))
        own = {label: c["podium"] for label, c in cells.items() if c["podium"]}
        if own:
            lines += [
                "",
                "podium's view: runs that failed because of the harness are left out of each seed's denominator; "
                "mean ± SEM [Student t 95% interval, n-1 df].",
                "",
            ]
            head = ["label", "seeds", "runs", "harness failures", "agent failures", "padded", *rate_head]
            lines += [md_row(head), md_row(["---"] * len(head))]
            for label, view in own.items():
                counts = [str(view[k]) for k in ("num_seeds", "runs", "harness_failures", "agent_failures", "padded")]
                metrics = view["metrics"]
                values = [_md_metric(metrics[k], "t_lower", "t_upper") if metrics else "-" for k in RATE_KEYS]
                lines.append(md_row([label, *counts, *values]))
    lines += md_sections(report)
    lines += audit_lines(report, markdown=True)
    lines += sealed_training_lines(report, markdown=True)
    lines += familiarity_text(report.get("familiarity"), WIDTH, markdown=True)
    notes = [(label, note) for label, data in labels.items() for note in data["notes"]]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {label}: {note}" for label, note in notes]
    lines += ["", "## Inputs", ""]
    lines += [
        f"- {label} ({data['kind']}, {data['runs']} runs): {', '.join(data['paths'])}" for label, data in labels.items()
    ]
    return "\n".join(lines) + "\n"

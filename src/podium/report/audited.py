"""The report's audited columns: medals before and after the audit, every reason per run, and the
integrity statement per label beside the known leakage of the competitions it ran.

A run's audit is its ``audit.json`` (written by ``podium audit``, read with :func:`podium.audit.read_audit`).
After the audit only a ``clean`` run keeps its medal: a ``flagged`` run keeps none; the medals of
``unclear`` runs, of ``incomplete`` runs (a check that applies did not run) and of runs never audited
are counted apart. Every name and reason shown as text or Markdown is escaped
(:func:`podium.errors.printable`). The report's JSON gains ``audit``::

    "audit": null | {LABEL: {"runs", "audited", "clean", "flagged", "unclear", "incomplete",
                             "medals_before", "medals_after", "medals_unclear", "medals_incomplete",
                             "medals_not_audited",
                             "reasons": [{"competition_id", "seed", "verdict", "medal", "reasons": [...]}],
                             "integrity": {"clean", "flagged", "unclear", "statement": [...]},
                             "known_leakage": {"ID@V": [...]}}}
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.audit import known_leakage, read_audit
from podium.report.sections import any_medal
from podium.report.tables import md_row, text_table
from podium.untrusted import printable

__all__ = ["COUNT_KEYS", "audit_fields", "audit_lines", "audit_section"]

_CALLS = re.compile(r"^validation: (\d+) calls, all format-only")
_NODE = re.compile(r"by node [^:,)]+")


def audit_fields(run_dir: Path) -> dict[str, Any]:
    """A run row's audit keys: ``audit`` (the verdict, None when never audited), ``audit_reasons`` (violations,
    then notes as ``note: ...``), ``integrity`` (the statement's parts) and ``integrity_verdict``."""
    audit = read_audit(run_dir)
    if audit is None:
        return {"audit": None, "audit_reasons": [], "integrity": None, "integrity_verdict": None}
    reasons = [f"{f.check}: {f.reason}" for f in audit.violations]
    if audit.incomplete:
        reasons.append(f"incomplete: {', '.join(audit.incomplete)}")
    reasons += [f"note: {f.reason}" for f in audit.notes if f.check != "integrity"]
    reasons += [
        f"{check} {r.verdict}"
        for check, r in ((r.check, r) for r in audit.results)
        if r.verdict == "unclear" and check != "integrity"
    ]
    integrity = audit.result("integrity")
    return {
        "audit": audit.verdict,
        "audit_reasons": reasons,
        "integrity": [f.reason for f in integrity.flags if not f.violation] if integrity else None,
        "integrity_verdict": integrity.verdict if integrity else None,
    }


def _statement(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The integrity statement of a label's runs, each part counted over the runs that have one."""
    stated = [r for r in runs if r.get("integrity")]
    if not stated:
        return []
    n = len(stated)
    parts = [p for r in stated for p in r["integrity"]]
    never = sum(p.startswith("answers: never mounted") for p in parts)
    # one line per kind of statement, whichever node of a cluster observed it
    isolated = Counter(_NODE.sub("by a node", p.split(";")[0]) for p in parts if p.startswith("network:"))
    calls = [int(m.group(1)) for p in parts if (m := _CALLS.match(p))]
    scaffold = sum(p.startswith("scaffold:") and "imports no grader" in p for p in parts)
    lines = [f"private answers never mounted: {never} of {n} runs"]
    lines += [f"{words.removeprefix('network: ')}: {count} of {n} runs" for words, count in sorted(isolated.items())]
    lines.append(
        f"validation endpoint: {sum(calls)} calls in {len(calls)} of {n} runs, all format-only (no score returned)"
    )
    lines.append(
        f"agent's folder imports no grader, calls no grading command, names no answers: {scaffold} of {n} runs"
    )
    return lines


def audit_section(by_label: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any] | None:
    """The ``audit`` block of the report (see the module docstring); None when no run of any label was audited."""
    if not any(r.get("audit") for runs in by_label.values() for r in runs):
        return None
    out: dict[str, Any] = {}
    for label, all_runs in by_label.items():
        runs = [r for r in all_runs if not r.get("padded")]
        verdicts = Counter(r.get("audit") for r in runs)
        medal = [r for r in runs if any_medal(r)]
        versions = sorted({(r["competition_id"], r["competition_version"]) for r in runs})
        out[label] = {
            "runs": len(runs),
            "audited": len(runs) - verdicts[None],
            "clean": verdicts["clean"],
            "flagged": verdicts["flagged"],
            "unclear": verdicts["unclear"],
            "incomplete": verdicts["incomplete"],
            "medals_before": len(medal),
            "medals_after": sum(1 for r in medal if r.get("audit") == "clean"),
            "medals_unclear": sum(1 for r in medal if r.get("audit") == "unclear"),
            "medals_incomplete": sum(1 for r in medal if r.get("audit") == "incomplete"),
            "medals_not_audited": sum(1 for r in medal if r.get("audit") is None),
            "reasons": [
                {
                    "competition_id": r["competition_id"],
                    "seed": r.get("seed"),
                    "verdict": r.get("audit"),
                    "medal": r.get("medal"),
                    "reasons": list(r.get("audit_reasons") or []),
                }
                for r in runs
                if r.get("audit_reasons") or r.get("audit") in ("flagged", "unclear", "incomplete")
            ],
            "integrity": {
                **{v: sum(1 for r in runs if r.get("integrity_verdict") == v) for v in ("clean", "flagged", "unclear")},
                "statement": _statement(runs),
            },
            "known_leakage": {f"{cid}@{v}": facts for cid, v in versions if (facts := known_leakage(cid, v))},
        }
    return out


_HEAD = [
    "label", "audited", "clean", "flagged", "unclear", "incomplete",
    "medals before", "after", "unclear", "incomplete", "not audited",
]  # fmt: skip
#: The block's counts, in the table's order (the HTML report's too).
COUNT_KEYS = (
    "audited", "clean", "flagged", "unclear", "incomplete",
    "medals_before", "medals_after", "medals_unclear", "medals_incomplete", "medals_not_audited",
)  # fmt: skip


def audit_lines(report: Mapping[str, Any], *, markdown: bool = False, width: int = 100) -> list[str]:
    """The audit block as text (or Markdown) lines: the medals table, the reasons per run, the integrity statement."""
    block = report.get("audit")
    if not block:
        return []
    rows = [[printable(label), *(str(a[k]) for k in COUNT_KEYS)] for label, a in block.items()]
    title = "Audit: medals before and after (only a clean run keeps its medal; unclear, incomplete, not audited apart)"
    lines = ["", f"## {title}", ""] if markdown else ["", f"== {title} =="]
    if markdown:
        lines += [md_row(_HEAD), md_row(["---"] * len(_HEAD)), *(md_row(r) for r in rows)]
    else:
        lines += text_table(_HEAD, rows)
    bullet = "- " if markdown else "  "
    for raw_label, a in block.items():
        label = printable(raw_label)
        if a["reasons"]:
            lines += ["", f"{label}: reasons per run" if not markdown else f"**{label}**: reasons per run", ""]
            for run in a["reasons"]:
                head = f"{run['competition_id']} seed {run['seed']} ({run['verdict'] or 'not audited'}, medal {run['medal'] or '-'}): "
                text = printable(head + "; ".join(run["reasons"] or [f"{run['verdict']}"]))
                text = text.replace("<", "\\<") if markdown else text
                lines += (
                    [bullet + text]
                    if markdown
                    else textwrap.wrap(text, width, initial_indent=bullet, subsequent_indent="      ")
                )
        statement = a["integrity"]["statement"]
        if statement:
            counts = ", ".join(f"{a['integrity'][v]} {v}" for v in ("clean", "flagged", "unclear"))
            lines += ["", f"{label}: test-signal integrity ({counts})"]
            lines += [bullet + printable(s) for s in statement]
        if not a["known_leakage"]:
            lines.append(f"{bullet}known leakage: none recorded for the competitions run")
        for ref, facts in a["known_leakage"].items():
            for fact in facts:
                text = f"known leakage, {ref}: {fact}"
                lines += (
                    [bullet + text]
                    if markdown
                    else textwrap.wrap(text, width, initial_indent=bullet, subsequent_indent="      ")
                )
    return lines

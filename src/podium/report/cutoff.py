"""The report's fresh split: ``podium report --ended-after DATE`` keeps the runs of the competitions whose
deadline is after a model's training cutoff (:mod:`podium.deadlines`) and narrows every split to them; with or
without the flag, the header names the cutoff of the report and of each run group made with ``--ended-after``
(its ``group.json``).

The report's JSON gains ``ended_after``::

    null | {"cutoff": "2023-01-01" | null,      # this report's --ended-after; null: only its groups' cutoffs
            "definition": "...",                # what a deadline is, in words
            "groups": [{"label", "path", "cutoff", "from", "competitions", "selected_at"}],
            "competitions": [{"competition_id", "deadline", "deadline_source"}],   # those of the runs reported
            "left_out": null | {"ended_before": [ids], "without_deadline": [ids]}}  # the runs' that --ended-after left out
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from podium.deadlines import deadline_of, sources_text
from podium.errors import UsageError
from podium.report.aggregate import names_text
from podium.report.inputs import LabelInput

__all__ = ["DEFINITION", "Deadlines", "cutoff_lines", "cutoff_section", "narrow", "narrow_splits"]

DEFINITION = (
    "a competition's deadline is its declaration's (Kaggle's metadata, or the author's word), else the last "
    "submission on its private leaderboard; a competition is kept when its deadline is after the cutoff, a "
    "model's training cutoff, and left out when it has none"
)


class Deadlines(dict[str, tuple[date | None, str | None]]):
    """Each competition's (deadline, source), looked up once per report (:func:`podium.deadlines.deadline_of`)."""

    def __missing__(self, competition_id: str) -> tuple[date | None, str | None]:
        found = self[competition_id] = deadline_of(competition_id)
        return found

    def after(self, competition_id: str, cutoff: date) -> bool:
        deadline = self[competition_id][0]
        return deadline is not None and deadline > cutoff


def narrow(
    inputs: Sequence[LabelInput], cutoff: date, known: Deadlines
) -> tuple[list[LabelInput], dict[str, list[str]]]:
    """Each label with only the runs whose competition ended after ``cutoff`` (its splits are narrowed by
    :func:`narrow_splits`), and the runs' competitions left out, by why; no run left is one line naming the
    cutoff and the fix."""
    ran = sorted({run["competition_id"] for item in inputs for run in item.runs})
    left_out = {
        "ended_before": [c for c in ran if known[c][0] is not None and not known.after(c, cutoff)],
        "without_deadline": [c for c in ran if known[c][0] is None],
    }
    if len(ran) == sum(map(len, left_out.values())):
        raise UsageError(
            f"--ended-after {cutoff} leaves none of the runs: of their {len(ran)} competitions, "
            f"{len(left_out['ended_before'])} ended on or before it and {len(left_out['without_deadline'])} have no "
            "deadline. Fix: give an earlier date, or report other runs"
        )
    narrowed = [
        replace(item, runs=[run for run in item.runs if known.after(run["competition_id"], cutoff)]) for item in inputs
    ]
    return narrowed, left_out


def narrow_splits(
    chosen: Sequence[tuple[str, list[str]]], cutoff: date, titles: dict[str, str], known: Deadlines
) -> list[tuple[str, list[str]]]:
    """The splits with only their competitions that ended after ``cutoff`` (those left empty dropped); each
    title says so."""
    out = []
    for key, ids in chosen:
        kept = [c for c in ids if known.after(c, cutoff)]
        if kept:
            titles[key] = f"{titles.get(key, key)}, ended after {cutoff}"
            out.append((key, kept))
    if not out:
        raise UsageError(
            f"--ended-after {cutoff} leaves no competition of the split(s) {', '.join(key for key, _ in chosen)}: none "
            "ended after it. Fix: give an earlier date, or another --split"
        )
    return out


def cutoff_section(
    inputs: Sequence[LabelInput], cutoff: date | None, left_out: Mapping[str, list[str]] | None, known: Deadlines
) -> dict[str, Any] | None:
    """The report's ``ended_after`` (the module docstring); None when neither the report nor a group has a cutoff."""
    groups = [
        {
            "label": item.label,
            "path": path,
            "cutoff": record.get("cutoff"),
            "from": record.get("from"),
            "competitions": len(record.get("competitions") or ()),
            "selected_at": record.get("selected_at"),
        }
        for item in inputs
        for path, record in item.ended_after.items()
    ]
    if cutoff is None and not groups:
        return None
    ran = sorted({run["competition_id"] for item in inputs for run in item.runs})
    competitions = []
    for cid in ran:
        deadline, source = known[cid]
        competitions.append(
            {"competition_id": cid, "deadline": deadline.isoformat() if deadline else None, "deadline_source": source}
        )
    return {
        "cutoff": cutoff.isoformat() if cutoff else None,
        "definition": DEFINITION,
        "groups": groups,
        "competitions": competitions,
        "left_out": dict(left_out) if left_out is not None else None,
    }


def cutoff_lines(report: Mapping[str, Any], width: int | None = None) -> list[str]:
    """The header's sentences about the cutoff (none without one), each wrapped to ``width`` (None: one line each)."""
    section = report.get("ended_after")
    if not section:
        return []
    sentences = []
    if section["cutoff"]:
        left = section["left_out"] or {}
        before, absent = left.get("ended_before") or [], left.get("without_deadline") or []
        sentences.append(
            f"Fresh split: only the competitions whose deadline is after {section['cutoff']} (--ended-after, a "
            f"model's training cutoff): {len(section['competitions'])} competition(s) of the runs kept; left out: "
            f"{len(before)} that ended on or before it"
            + (f" ({names_text(before, 5)})" if before else "")
            + f", {len(absent)} without a deadline"
            + (f" ({names_text(absent, 5)})" if absent else "")
            + "."
        )
    for group in section["groups"]:
        sentences.append(
            f"Run group {group['label']} was selected by --ended-after {group['cutoff']} of {group['from']} on "
            f"{str(group['selected_at'])[:10]} ({group['competitions']} competition(s); its group.json)."
        )
    said = sources_text(c["deadline_source"] for c in section["competitions"] if c["deadline"])
    sentences.append(f"Deadlines of the competitions reported: {said}; `podium list` names each.")
    if width is None:
        return sentences
    return [line for sentence in sentences for line in textwrap.wrap(sentence, width, break_on_hyphens=False)]

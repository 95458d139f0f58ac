"""`podium report --familiarity FILE`: each competition's familiarity (``podium familiarity``'s file)
against the performance the label reached on it, with Pearson's r and a bootstrap interval.

**Performance** is the published contamination experiment's: where a run's score lies between the
sample submission's score (0) and the gold threshold (1), ``(score - sample) / (gold - sample)``,
which reads the same for either direction of the metric. podium clips it to [0, 1] (a run worse
than the sample submission counts 0, one past gold counts 1, so one extreme score cannot carry the
correlation) and counts a run without a valid submission as 0; a competition's performance is the
mean over its runs. The unclipped mean is kept beside it. A competition whose sample-submission
score or gold threshold is unknown, or equal, has no performance and is left out.

The report's JSON gains ``familiarity``::

    {"file", "model", "definition", "performance",
     "labels": {LABEL: {"competitions": [{"competition_id", "familiarity", "performance",
                                          "performance_unclipped", "runs"}],
                        "pearson": {"n", "r", "bootstrap": {"confidence", "lower", "upper",
                                                            "resamples", "degenerate", "seed"} | null}}},
     "differences": [{"a", "b", "competitions": [{"competition_id", "familiarity", "difference"}],
                      "pearson": {...}}],            # A's performance minus B's, per compared pair
     "without_familiarity": [ids run but not in the file]}
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from podium import registry
from podium.audit.familiarity import familiarity_by_competition
from podium.errors import PodiumError
from podium.report.stats import pearson
from podium.report.tables import md_row, text_table

__all__ = ["PERFORMANCE", "familiarity_section", "familiarity_text", "position"]

PERFORMANCE = (
    "performance: the score's position between the sample submission's score (0) and the gold threshold (1), "
    "clipped to [0, 1]; no valid submission counts 0; mean over the competition's runs"
)


def position(score: float | None, sample: float | None, gold: float | None) -> float | None:
    """``(score - sample) / (gold - sample)`` unclipped (None where gold and sample are unknown or equal;
    0.0 for a missing score)."""
    if sample is None or gold is None or gold == sample:
        return None
    if score is None:
        return 0.0
    return (float(score) - sample) / (gold - sample)


@cache
def _anchors(competition_id: str, version: int) -> tuple[float | None, float | None]:
    """(sample submission's score, gold threshold) of a competition's version."""
    try:
        competition = registry.get(f"{competition_id}@{version}")
    except PodiumError:
        return None, None
    gold = competition.leaderboard.gold if competition.leaderboard else None
    return competition.sample_submission_score, gold


def _performances(runs: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """competition -> each run's unclipped position (runs of competitions without anchors left out)."""
    out: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.get("padded"):
            continue
        sample, gold = _anchors(str(run["competition_id"]), int(run.get("competition_version") or 1))
        score = run.get("score") if run.get("valid_submission") else None
        value = position(score, sample, gold)
        if value is not None:
            out[str(run["competition_id"])].append(value)
    return out


def familiarity_section(
    runs: Mapping[str, Sequence[Mapping[str, Any]]],
    data: Mapping[str, Any],
    *,
    source: str,
    pairs: Sequence[tuple[str, str]] = (),
    seed: int = 0,
) -> dict[str, Any]:
    """The report's ``familiarity`` block (module docstring) for each label's runs and a familiarity file;
    for each compared pair (A, B), A's performance minus B's against familiarity."""
    known = familiarity_by_competition(data)
    labels = {}
    missing: set[str] = set()
    for label, rows in runs.items():
        competitions: list[dict[str, Any]] = []
        for cid, values in sorted(_performances(rows).items()):
            if cid not in known:
                missing.add(cid)
                continue
            clipped = [min(1.0, max(0.0, v)) for v in values]
            competitions.append(
                {"competition_id": cid, "familiarity": known[cid], "performance": sum(clipped) / len(clipped),
                 "performance_unclipped": sum(values) / len(values), "runs": len(values)}
            )  # fmt: skip
        fits = pearson([c["familiarity"] for c in competitions], [c["performance"] for c in competitions], seed=seed)
        labels[label] = {"competitions": competitions, "pearson": fits}
    return {
        "file": source,
        "model": data.get("model"),
        "definition": data.get("definition"),
        "performance": PERFORMANCE,
        "labels": labels,
        "differences": [_difference(labels, a, b, seed) for a, b in pairs],
        "without_familiarity": sorted(missing),
    }


def _difference(labels: Mapping[str, Mapping[str, Any]], a: str, b: str, seed: int) -> dict[str, Any]:
    """A's performance minus B's on the competitions both ran, against familiarity (e.g. the original
    description against the obfuscated one: does hiding the competition cost more where the model knows it?)."""
    of_b = {c["competition_id"]: c for c in labels[b]["competitions"]}
    rows = [
        {"competition_id": c["competition_id"], "familiarity": c["familiarity"],
         "difference": c["performance"] - of_b[c["competition_id"]]["performance"]}
        for c in labels[a]["competitions"]
        if c["competition_id"] in of_b
    ]  # fmt: skip
    fits = pearson([r["familiarity"] for r in rows], [r["difference"] for r in rows], seed=seed)
    return {"a": a, "b": b, "competitions": rows, "pearson": fits}


def _r_text(fits: Mapping[str, Any]) -> str:
    if fits["r"] is None:
        return f"Pearson r: none ({fits['n']} competition(s); it needs 3 with varying values)"
    boot = fits["bootstrap"]
    return (
        f"Pearson r = {fits['r']:+.3f} over {fits['n']} competitions, 95% bootstrap interval "
        f"[{boot['lower']:+.3f}, {boot['upper']:+.3f}] ({boot['resamples']} resamples of the competitions)"
    )


def _model_text(model: Any) -> str:
    if not isinstance(model, Mapping):
        return "?"
    return str(model.get("file") or model.get("model") or model.get("kind") or "?")


def familiarity_text(section: Mapping[str, Any] | None, width: int, markdown: bool = False) -> list[str]:
    """The familiarity block as text lines (or Markdown): the definitions, r per label, and the table."""
    if not section:
        return []
    title = "Familiarity against performance"
    lines = ["", f"## {title}", ""] if markdown else ["", f"== {title} =="]
    intro = f"Model {_model_text(section['model'])}. {section['definition'] or ''}. {section['performance']}."
    lines += [intro] if markdown else textwrap.wrap(intro, width)
    for label, block in section["labels"].items():
        head = ["competition", "familiarity", "performance", "unclipped", "runs"]
        rows = [
            [c["competition_id"], f"{c['familiarity']:.4f}", f"{c['performance']:.3f}",
             f"{c['performance_unclipped']:.3f}", str(c["runs"])]
            for c in block["competitions"]
        ]  # fmt: skip
        words = f"{label}: {_r_text(block['pearson'])}"
        if markdown:
            lines += ["", f"### {label}", "", _r_text(block["pearson"]) + ".", "", md_row(head), md_row(["---"] * 5)]
            lines += [md_row(row) for row in rows]
        else:
            lines += ["", *textwrap.wrap(words, width), *(text_table(head, rows) if rows else [])]
    for diff in section.get("differences") or []:
        head = ["competition", "familiarity", "A - B"]
        rows = [
            [r["competition_id"], f"{r['familiarity']:.4f}", f"{r['difference']:+.3f}"] for r in diff["competitions"]
        ]
        words = f"A = {diff['a']} minus B = {diff['b']}, performance: {_r_text(diff['pearson'])}"
        if markdown:
            lines += ["", f"### {diff['a']} minus {diff['b']}", "", _r_text(diff["pearson"]) + ".", ""]
            lines += [md_row(head), md_row(["---"] * 3), *(md_row(row) for row in rows)]
        else:
            lines += ["", *textwrap.wrap(words, width), *(text_table(head, rows) if rows else [])]
    if section["without_familiarity"]:
        note = f"Run but not in {section['file']}: {', '.join(section['without_familiarity'])}."
        lines += ["", note] if markdown else ["", *textwrap.wrap(note, width)]
    return lines

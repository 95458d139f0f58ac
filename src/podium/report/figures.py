"""The HTML report's figures, drawn with matplotlib and embedded as SVG text (no files, no network).

matplotlib rather than Vega-Lite: an SVG needs no JavaScript runtime to be read, so the report opens
the same in any browser, offline, years later, and prints; Vega-Lite would need its JavaScript
bundle inlined in every file (about a megabyte) and a browser that runs it. Figures use
matplotlib's object API (``Figure``, no pyplot), so drawing one never touches a global backend or
opens a window, and ``svg.hashsalt`` makes the same report give the same bytes.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from podium.report.sections import pass_at_k_blocks

__all__ = ["cost_figure", "familiarity_figure", "heatmap_figure", "pass_at_k_figure", "time_scaling_figure"]


def _svg(figure: Any) -> str:
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "podium", "svg.fonttype": "none"}):
        figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def pass_at_k_figure(report: Mapping[str, Any]) -> str | None:
    """pass@k (any medal) against k, one panel per split with curves, one line per label."""
    panels: dict[str, list[tuple[str, Sequence[int], Sequence[float]]]] = {}
    for label, key, block in pass_at_k_blocks(report):
        panels.setdefault(key, []).append((label, block["k"], block["curves"]["any_medal"]))
    if not panels:
        return None
    figure = _figure(4.2 * len(panels), 3.4)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, lines) in zip(axes, panels.items(), strict=True):
        for label, ks, values in lines:
            ax.plot(ks, values, marker="o", label=label)
        ax.set_title(report["splits"][key]["title"])
        ax.set_xlabel("k (runs per competition)")
        ax.set_ylabel("pass@k, any medal (%)")
        ax.set_ylim(0, 100)
        ax.set_xticks(sorted({k for _, ks, _ in lines for k in ks}))
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _svg(figure)


def time_scaling_figure(scaling: Mapping[str, Any] | None) -> str | None:
    """Any medal and mean percentile of the best-so-far submission against hours, one line per label."""
    if not scaling or not scaling["labels"]:
        return None
    figure = _figure(9, 3.4)
    left, right = figure.subplots(1, 2)
    for label, data in scaling["labels"].items():
        hours = [p["hours"] for p in data["points"]]
        left.plot(hours, [p["any_medal_percentage"] for p in data["points"]], marker="o", label=label)
        right.plot(hours, [p["mean_percentile"] for p in data["points"]], marker="o", label=label)
    for ax, words in ((left, "any medal (% of runs)"), (right, "mean leaderboard percentile (%)")):
        ax.set_xlabel("hours into the run")
        ax.set_ylabel(words)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    left.legend(fontsize="small")
    return _svg(figure)


def heatmap_figure(
    labels: Sequence[str], competitions: Sequence[str], values: Sequence[Sequence[float | None]]
) -> str | None:
    """Mean leaderboard percentile (%) per competition (rows) and label (columns); blank where a label did not run it."""
    if not labels or not competitions:
        return None
    import numpy as np

    grid = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    figure = _figure(max(4.0, 1.2 * len(labels) + 3.0), max(2.0, 0.28 * len(competitions) + 1.2))
    ax = figure.subplots()
    image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap="viridis", vmin=0, vmax=100)
    ax.set_xticks(range(len(labels)), labels=labels, rotation=20, ha="right", fontsize="small")
    ax.set_yticks(range(len(competitions)), labels=competitions, fontsize="small")
    if grid.size <= 600:
        for (row, column), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(column, row, f"{value:.0f}", ha="center", va="center", fontsize="x-small",
                        color="white" if value < 60 else "black")  # fmt: skip
    figure.colorbar(image, ax=ax, label="mean percentile (%)")
    return _svg(figure)


def cost_figure(report: Mapping[str, Any]) -> str | None:
    """USD and GPU-hours per medal, one bar per label (labels without a medal or a cost are left out)."""
    usd = {label: d["cost"]["cost_usd_per_medal"] for label, d in report["labels"].items()}
    gpu = {label: d["cost"]["gpu_hours_per_medal"] for label, d in report["labels"].items()}
    panels = [(words, v) for words, v in (("USD per medal", usd), ("GPU-hours per medal", gpu)) if any(v.values())]
    if not panels:
        return None
    figure = _figure(4.5 * len(panels), 3.2)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (words, values) in zip(axes, panels, strict=True):
        shown = {label: value for label, value in values.items() if value}
        ax.bar(range(len(shown)), list(shown.values()))
        ax.set_xticks(range(len(shown)), labels=list(shown), rotation=20, ha="right", fontsize="small")
        ax.set_ylabel(words)
        ax.grid(axis="y", alpha=0.3)
    return _svg(figure)


def familiarity_figure(section: Mapping[str, Any] | None) -> str | None:
    """Performance against familiarity, one panel per label, and A's performance minus B's against it, one
    panel per compared pair; one point per competition, Pearson's r in each title."""
    if not section:
        return None
    panels = [
        (label, block, "performance", "performance (sample = 0, gold = 1)")
        for label, block in section["labels"].items()
        if block["competitions"]
    ]
    panels += [
        (f"{d['a']} minus {d['b']}", d, "difference", "performance, A - B")
        for d in section.get("differences") or []
        if d["competitions"]
    ]
    if not panels:
        return None
    figure = _figure(4.2 * len(panels), 3.6)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, block, key, words) in zip(axes, panels, strict=True):
        points = [(c["familiarity"], c[key], c["competition_id"]) for c in block["competitions"]]
        ax.scatter([p[0] for p in points], [p[1] for p in points], s=18)
        for x, y, name in points if len(points) <= 30 else ():
            ax.annotate(name, (x, y), fontsize=6, alpha=0.7)
        fits = block["pearson"]
        r = (
            "r: -"
            if fits["r"] is None
            else f"r = {fits['r']:+.2f} [{fits['bootstrap']['lower']:+.2f}, {fits['bootstrap']['upper']:+.2f}]"
        )
        ax.set_title(f"{title}\n{r}", fontsize="small")
        ax.set_xlabel("familiarity (mean next-token probability)")
        ax.set_ylabel(words)
        ax.set_ylim(*((-1.05, 1.05) if key == "difference" else (-0.05, 1.05)))
        if key == "difference":
            ax.axhline(0, color="grey", linewidth=0.8)
        ax.grid(alpha=0.3)
    return _svg(figure)

"""The grading benchmark's results as a Markdown table and a JSON summary (see ``grading.py``)."""

from __future__ import annotations

import statistics
from typing import Any

from _grading_data import MASK_METRICS

# --------------------------------------------------------------------------------------------
# Reporting


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _score_text(x: float | None) -> str:
    return "invalid" if x is None else f"{x:.6g}"


def markdown(results: list[dict[str, Any]], env_info: dict[str, Any]) -> str:
    lines = [
        "| competition | metric | scale | answer rows | baseline s | baseline CPU s | baseline MB | podium s | podium CPU s | podium MB | speedup | podium/baseline memory | scores |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        rows = "-" if "rows" not in r else f"{r['rows']:,}" + (f" (capped: {r['capped']})" if r.get("capped") else "")
        if "skipped" in r:
            lines.append(
                f"| {r['id']} | {r['metric']} | {r['scale']}x | {rows} | | | | | | | | | skipped: {r['skipped']} |"
            )
            continue
        b, p = r["baseline"], r["podium"]
        note = "agree" if r["agreement"] == "ok" else r["agreement"]
        if r["agreement"] != "ok":
            note += f" (baseline {_score_text(b['score'])}{': ' + b['error'] if b['error'] else ''}; podium {_score_text(p['score'])}{': ' + p['error'] if p['error'] else ''})"
        lines.append(
            f"| {r['id']} | {r['metric']} | {r['scale']}x | {rows} | {_f(b['s'])} | {_f(b.get('cpu_s'))} | {_f(b['mb'], 0)} | {_f(p['s'])} | {_f(p.get('cpu_s'))} | {_f(p['mb'], 0)} "
            f"| {b['s'] / p['s']:.1f}x | {p['mb'] / b['mb']:.2f} | {note} |"
        )
    return "\n".join(lines) + "\n"


def summary(results: list[dict[str, Any]], env_info: dict[str, Any]) -> dict[str, Any]:
    done = [r for r in results if "skipped" not in r]
    out: dict[str, Any] = {"startup": env_info}
    for scale in sorted({r["scale"] for r in done}):
        rows = [r for r in done if r["scale"] == scale]
        speed = {r["id"]: r["baseline"]["s"] / r["podium"]["s"] for r in rows}
        cpu = [r["baseline"]["cpu_s"] / r["podium"]["cpu_s"] for r in rows if r["podium"].get("cpu_s")]
        masks = {r["id"]: round(speed[r["id"]], 1) for r in rows if r["metric"] in MASK_METRICS}
        out[f"{scale}x"] = {
            "competitions": len(rows),
            "median_speedup": round(statistics.median(speed.values()), 2) if speed else None,
            "median_cpu_speedup": round(statistics.median(cpu), 2) if cpu else None,
            "min_speedup": min(speed.items(), key=lambda kv: kv[1]) if speed else None,
            "slower_than_baseline": {k: round(v, 2) for k, v in speed.items() if v < 1},
            "mask_speedups": masks,
            "more_memory_than_baseline": {
                r["id"]: [round(r["podium"]["mb"]), round(r["baseline"]["mb"])]
                for r in rows
                if r["podium"]["mb"] > r["baseline"]["mb"]
            },
            "mismatches": [r["id"] for r in rows if r["agreement"] != "ok"],
        }
    return out


# --------------------------------------------------------------------------------------------

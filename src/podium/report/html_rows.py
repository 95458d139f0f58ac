"""The rows each section of the HTML report (:mod:`podium.report.html`) shows, as its template reads them: the
headline per split, the readings, the versions, pass@k, the comparisons, cost, the runs (linked to their
folders), the heatmap, time scaling and familiarity. Every number is a cell carrying its JSON pointer into the
report and its value, so a reader or a test can check it against the data it came from."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from podium.report.aggregate import RATE_KEYS
from podium.report.compute import profile_lines
from podium.report.figures import (
    heatmap_figure,
)
from podium.report.readings import READINGS
from podium.report.sections import COMPARED, PASS_FLAGS, pass_at_k_blocks
from podium.report.tables import RUN_HEAD

__all__ = ["pointer", "version_anchor"]


def pointer(*parts: object) -> str:
    """The JSON pointer of a value (``/labels/a~1b/splits/low``: ``/`` in a key is ``~1``, ``~`` is ``~0``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _cell(value: float | int | None, path: str | None, text: str | None = None, digits: int = 1) -> dict[str, Any]:
    if value is None:
        return {"text": "-", "value": "", "path": None}
    shown = text if text is not None else (f"{value:.{digits}f}" if isinstance(value, float) else str(value))
    return {"text": shown, "value": json.dumps(value), "path": path}


def _headline(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    splits = []
    for key, split in report["splits"].items():
        rows = []
        words = ""
        for label, data in report["labels"].items():
            cell = data["splits"][key]
            if not cell["runs"]:
                continue
            words = words or cell["definitions"]
            published = cell["published"]
            if "error" in published:
                rows.append({"label": label, "error": published["error"]})
                continue
            base = ("labels", label, "splits", key, "published")
            cells = []
            for metric in RATE_KEYS:
                m = published["metrics"][metric]
                cells.append(
                    {
                        **_cell(m["mean"], pointer(*base, "metrics", metric, "mean")),
                        "text": f"{m['mean']:.1f} ± {m['standard_error']:.1f}",
                        "title": f"95% interval [{m['ci_lower']:.1f}, {m['ci_upper']:.1f}]",
                    }
                )
            own = cell["podium"]
            mine = own["metrics"]["any_medal_percentage"] if own and own["metrics"] else None
            if mine is None:
                podium_text = "-"
            elif mine["t_lower"] is None:
                podium_text = f"{mine['mean']:.1f} (one seed)"
            else:
                podium_text = f"{mine['mean']:.1f} [{mine['t_lower']:.1f}, {mine['t_upper']:.1f}]"
            seeds = published["num_seeds_averaged"]
            rows.append(
                {
                    "label": label,
                    "error": None,
                    "seeds": _cell(seeds, pointer(*base, "num_seeds_averaged")),
                    "cells": cells,
                    "podium": podium_text
                    + (f"; {own['harness_failures']} harness failure(s)" if own and own["harness_failures"] else ""),
                }
            )
        if rows:
            splits.append(
                {
                    "key": key,
                    "title": split["title"],
                    "competitions": split["competitions"],
                    "rows": rows,
                    "definitions": words,
                    "readings": _readings(report, key),
                    "compute": profile_lines(report, [row["label"] for row in rows]),
                }
            )
    return splits


def version_anchor(competition_id: str) -> str:
    """The id of a competition's entry in the report's section of versions."""
    return f"versions-{competition_id}"


def _readings(report: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The split's three readings of any medal per label, the competitions left out for a leak (each linked to
    its versions) and what each label's corrected reading graded otherwise."""
    rows: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    known = report.get("versions") or {}
    for label, data in report["labels"].items():
        cell = data["splits"][key]
        if not cell["runs"]:
            continue
        cells = []
        for which in READINGS:
            block = cell["readings"][which]
            if "error" in block:
                cells.append({**_cell(None, None), "title": block["error"]})
                continue
            metric = block["metrics"]["any_medal_percentage"]
            path = pointer("labels", label, "splits", key, "readings", which, "metrics", "any_medal_percentage", "mean")
            cells.append(
                {
                    **_cell(metric["mean"], path),
                    "text": f"{metric['mean']:.1f} ± {metric['standard_error']:.1f}",
                    "title": f"95% interval [{metric['ci_lower']:.1f}, {metric['ci_upper']:.1f}]",
                }
            )
        rows.append({"label": label, "cells": cells})
        readings = cell["readings"]
        excluded = excluded or readings["without_leaks"]["excluded"]
        for ref in readings["corrected"]["changed"]:
            cid = ref.split("@")[0]
            notes.append({"label": label, "ref": ref, "href": "#" + version_anchor(cid) if cid in known else None,
                          "text": "graded by this later version in the corrected reading"})  # fmt: skip
        for missing in readings["corrected"]["not_newest"]:
            cid = missing["competition_id"]
            notes.append({"label": label, "ref": f"{cid}@{missing['read_at']}",
                          "text": f"kept in the corrected reading: {missing['reason']}; {missing['fix']}",
                          "href": "#" + version_anchor(cid) if cid in known else None})  # fmt: skip
    first = next(iter(report["labels"].values()))["splits"][key]["readings"]["without_leaks"]
    return {
        "head": [*READINGS.values()],
        "kept": first["competitions"],
        "rows": rows,
        "excluded": [
            {**e, "href": "#" + version_anchor(e["competition_id"]) if e["competition_id"] in known else None}
            for e in excluded
        ],
        "notes": notes,
    }


def _versions(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each competition of the report with its versions and what each changes, and its known leakage."""
    used: dict[str, set[int]] = {}
    for data in report["labels"].values():
        for comp in data["competitions"]:
            used.setdefault(comp["competition_id"], set()).add(comp["competition_version"])
    return [
        {
            "id": cid,
            "anchor": version_anchor(cid),
            "versions": [{**v, "ran": v["version"] in used.get(cid, ())} for v in facts["versions"]],
            "known_leakage": facts["known_leakage"],
        }
        for cid, facts in (report.get("versions") or {}).items()
    ]


def _pass_rows(report: Mapping[str, Any]) -> tuple[list[int], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    longest: list[int] = []
    for label, key, block in pass_at_k_blocks(report):
        longest = block["k"] if len(block["k"]) > len(longest) else longest
        for flag, words in PASS_FLAGS.items():
            cells = [
                _cell(v, pointer("labels", label, "splits", key, "pass_at_k", "curves", flag, i))
                for i, v in enumerate(block["curves"][flag])
            ]
            rows.append({"label": label, "split": report["splits"][key]["title"], "flag": words, "cells": cells})
    for row in rows:
        row["cells"] += [_cell(None, None)] * (len(longest) - len(row["cells"]))
    return list(longest), rows


def _comparisons(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for index, c in enumerate(report.get("comparisons") or []):
        rows = []
        for what, result in c["values"].items():
            if not result["competitions"]:
                continue
            base = ("comparisons", index, "values", what)
            boot, sign = result["bootstrap"], result["sign_test"]
            cells = [
                _cell(result["mean_a"], pointer(*base, "mean_a")),
                _cell(result["mean_b"], pointer(*base, "mean_b")),
                _cell(
                    result["mean_difference"], pointer(*base, "mean_difference"), f"{result['mean_difference']:+.1f}"
                ),
                {"text": f"[{boot['lower']:+.1f}, {boot['upper']:+.1f}]", "value": "", "path": None},
                {"text": f"{sign['wins']} / {sign['losses']} / {sign['ties']}", "value": "", "path": None},
                _cell(sign["p"], pointer(*base, "sign_test", "p"), f"{sign['p']:.3g}"),
                _cell(
                    result["permutation"]["p"], pointer(*base, "permutation", "p"), f"{result['permutation']['p']:.3g}"
                ),
            ]
            rows.append({"name": COMPARED[what], "cells": cells})
        out.append({"a": c["a"], "b": c["b"], "competitions": c["competitions"], "rows": rows})
    return out


_COST = (
    ("runs", "runs", 0),
    ("medals", "medals", 0),
    ("llm_calls", "LLM calls", 0),
    ("input_tokens", "tokens in", 0),
    ("output_tokens", "tokens out", 0),
    ("cost_usd", "USD", 2),
    ("cost_usd_per_medal", "USD per medal", 2),
    ("gpu_hours", "GPU-hours", 2),
    ("gpu_hours_per_medal", "GPU-hours per medal", 2),
    ("runtime_hours", "hours", 2),
)


def _cost_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, data in report["labels"].items():
        cells = []
        for key, _, digits in _COST:
            value = data["cost"][key]
            text = None if value is None or digits else f"{value:,.0f}"
            cells.append(_cell(value, pointer("labels", label, "cost", key), text, digits))
        rows.append({"label": label, "cells": cells})
    return rows


def _link(run_dir: str | None, links_from: str | None) -> str | None:
    if not run_dir:
        return None
    if links_from is None:
        return Path(run_dir).resolve().as_uri()
    return os.path.relpath(run_dir, links_from).replace(os.sep, "/") + "/"


_RUN_HEAD = [*RUN_HEAD, "folder"]


def _runs(
    report: Mapping[str, Any], links_from: str | None, run_link: Callable[[str], str] | None = None
) -> Iterator[list[dict[str, Any]]]:
    """The per-run table's rows, made as the template reaches them (10,000 runs never sit in memory as cells)."""
    for label, data in report["labels"].items():
        for ci, comp in enumerate(data["competitions"]):
            direction = {True: " (higher is better)", False: " (lower is better)"}.get(comp["higher_is_better"], "")
            for ri, run in enumerate(comp["runs"]):
                base = ("labels", label, "competitions", ci, "runs", ri)
                percentile = run["percentile"]
                link = run_link(run["run_dir"]) if run_link and run["run_dir"] else _link(run["run_dir"], links_from)
                row = [
                    {"text": f"{comp['competition_id']}@{comp['competition_version']}", "cls": "text"},
                    {"text": f"{comp['metric'] or '?'}{direction}", "cls": "text"},
                    {"text": label, "cls": "text"},
                    _cell(run["seed"], pointer(*base, "seed")),
                    _cell(
                        run["score"], pointer(*base, "score"), None if run["score"] is None else f"{run['score']:.6g}"
                    ),
                    {  # shown in %, the JSON holds the fraction: data-scale says so
                        **_cell(
                            percentile,
                            pointer(*base, "percentile"),
                            None if percentile is None else f"{percentile * 100:.1f}",
                        ),
                        "scale": 100,
                    },
                    {"text": "-" if run["rank"] is None else f"{run['rank']} of {run['n_teams']}", "cls": ""},
                    {"text": run["medal"] or "-", "cls": "text"},
                    _cell(run["runtime_s"], pointer(*base, "runtime_s")),
                    _cell(run["exit_code"], pointer(*base, "exit_code")),
                    {"text": f"{run['failure_kind']}: {run['failure']}" if run["failure"] else "", "cls": "text"},
                    {"text": "folder" if link else "", "href": link, "cls": "text"},
                ]
                if comp["competition_id"] in (report.get("versions") or {}):  # the competition's versions
                    row[0]["href"] = "#" + version_anchor(comp["competition_id"])
                yield [{"cls": "", "path": None, "value": "", "href": None, "scale": None, **cell} for cell in row]


def _heatmap(report: Mapping[str, Any]) -> str | None:
    labels = list(report["labels"])
    means: dict[str, dict[str, float | None]] = {}
    for label, data in report["labels"].items():
        for comp in data["competitions"]:
            value = comp["mean_percentile"]
            means.setdefault(comp["competition_id"], {})[label] = None if value is None else value * 100
    competitions = sorted(means)
    return heatmap_figure(labels, competitions, [[means[c].get(label) for label in labels] for c in competitions])


def _time(report: Mapping[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    scaling = report.get("time_scaling")
    if not scaling or not scaling["labels"]:
        return [], []
    hours = [f"{h:g} h" if h >= 1 else f"{h * 60:.3g} min" for h in scaling["hours"]]
    rows = []
    for label, data in scaling["labels"].items():
        cells = [
            _cell(
                p["any_medal_percentage"], pointer("time_scaling", "labels", label, "points", i, "any_medal_percentage")
            )
            for i, p in enumerate(data["points"])
        ]
        rows.append({"label": label, "cells": cells})
    return hours, rows


def _r_words(fits: Mapping[str, Any]) -> str:
    if fits["r"] is None:
        return "none (fewer than 3 competitions, or a constant side)"
    boot = fits["bootstrap"]
    return f"{fits['r']:+.3f}, 95% bootstrap [{boot['lower']:+.3f}, {boot['upper']:+.3f}], {fits['n']} competitions"


def _familiarity(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each label's (and each compared pair's) r and its competitions' values, as cells."""
    section = report.get("familiarity")
    if not section:
        return []
    blocks: list[tuple[str, tuple[object, ...], Mapping[str, Any], tuple[str, ...]]] = [
        (label, ("familiarity", "labels", label), block, ("performance", "runs"))
        for label, block in section["labels"].items()
    ]
    blocks += [
        (f"{d['a']} minus {d['b']}", ("familiarity", "differences", i), d, ("difference",))
        for i, d in enumerate(section.get("differences") or [])
    ]
    out = []
    for title, base, block, keys in blocks:
        rows = [
            [
                {"text": c["competition_id"], "value": "", "path": None},
                *(
                    _cell(c[key], pointer(*base, "competitions", i, key), None if key == "runs" else f"{c[key]:.4f}")
                    for key in ("familiarity", *keys)
                ),
            ]
            for i, c in enumerate(block["competitions"])
        ]
        fits = block["pearson"]
        out.append(
            {"title": title, "head": ["competition", "familiarity", *keys], "r": _r_words(fits),
             "r_path": pointer(*base, "pearson", "r"), "r_value": json.dumps(fits["r"]), "rows": rows}
        )  # fmt: skip
    return out

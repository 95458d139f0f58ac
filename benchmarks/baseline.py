"""A baseline grader written the way the published harness (MLE-bench) grades, for benchmarks.

    python benchmarks/baseline.py SUBMISSION.csv ID[@VERSION] --data-dir DIR

Prints ``{"competition_id": ..., "score": ..., "error": ...}`` as JSON. Like the published
graders it reads both files with ``pandas.read_csv(float_precision="round_trip")``, checks the
columns and row count, sorts both frames by id, requires identical id arrays, and then calls the
scikit-learn / scipy metric, or, for bespoke metrics, a straightforward Python implementation in
the published style (a Python loop per row / per image, one RLE decode per image, pandas groupby
for grouped metrics). Which competition uses which metric, its options and the id and target
columns come from podium's declaration (the published harness reads the same facts from its own
config files), so both graders score the same definition.

Deliberately *not* reproduced, which makes this baseline faster than the published harness: the
published ``grade-sample`` imports the registry's data-preparation code of every competition
before grading (0.5-1 s); this baseline imports pandas, and scikit-learn / scipy only where its
metric needs them. Score rounding to 5 decimals is left out so scores can be compared exactly.

Where the baseline reuses podium code it says so: answers that are not a plain CSV table (JSONL,
or answers a hook reshapes) are loaded with the competition's ``hooks.load_answers``; the 3D
detection mAP calls podium's ``map_3d`` once per sample (the published grader also scores sample
by sample, in a process pool).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the metrics beside this file, however it is loaded

import _baseline_boxes
import _baseline_labels
import _baseline_masks
import _baseline_values

#: Every metric by name: the public functions of the four metric modules (``rle_decode`` is a helper).
METRICS = {
    name: fn
    for module in (_baseline_labels, _baseline_values, _baseline_masks, _baseline_boxes)
    for name, fn in vars(module).items()
    if callable(fn)
    and not name.startswith("_")
    and name != "rle_decode"
    and getattr(fn, "__module__", None) == module.__name__
}


# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# The grader: read, check, sort, compare ids, score.


def _read_answers(competition, data_dir: Path) -> pd.DataFrame:
    path = data_dir / competition.id / "prepared" / "private" / competition.answers
    load_answers = competition.hook("load_answers")
    if load_answers is not None:
        # Reuses podium's loader for answers that are not a plain table (JSONL, long format).
        frame = load_answers(path)
        df = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in frame.columns.items()})
        for col in df.columns:
            with contextlib.suppress(ValueError, TypeError):
                df[col] = pd.to_numeric(df[col])
        return df
    return pd.read_csv(path, float_precision="round_trip")


def _column(df: pd.DataFrame, spec: Any) -> np.ndarray:
    return df[spec].to_numpy()


def grade(submission_path: Path, ref: str, data_dir: Path) -> float:
    from podium import registry

    comp = registry.get(ref)
    answers = _read_answers(comp, data_dir)
    submission = pd.read_csv(submission_path, float_precision="round_trip")
    ids = list(comp.id_columns)
    sub_cols = [s for s, _ in comp.targets]
    ans_cols = [a for _, a in comp.targets]
    missing = [c for c in ids + sub_cols if c not in submission.columns]
    if missing:
        raise ValueError(f"submission lacks columns {missing}")
    if comp.matching.get("extra_ids"):
        submission = submission[submission.set_index(ids).index.isin(answers.set_index(ids).index)]
    if len(submission) != len(answers):
        raise ValueError(f"submission has {len(submission)} rows, answers {len(answers)}")
    rule = comp.checks.get("row_sum")
    if rule:
        sums = submission[list(rule["columns"])].sum(axis=1)
        if (np.abs(sums - 1) > float(rule.get("tolerance", 1e-6))).any():
            raise ValueError("probabilities must sum to 1 on every row")
    submission = submission.sort_values(ids, kind="stable").reset_index(drop=True)
    answers = answers.sort_values(ids, kind="stable").reset_index(drop=True)
    for c in ids:
        if not (submission[c].to_numpy() == answers[c].to_numpy()).all():
            raise ValueError(f"submission and answers {c} values differ")
    spec = comp.metric
    if spec.where:
        col = answers[spec.where["column"]]
        keep = (col == spec.where["equals"]) if "equals" in spec.where else (col != spec.where["not_equals"])
        answers, submission = (
            answers[keep.to_numpy()].reset_index(drop=True),
            submission[keep.to_numpy()].reset_index(drop=True),
        )
    for c in sub_cols:
        if submission[c].dtype == object or answers[ans_cols[sub_cols.index(c)]].dtype == object:
            submission[c] = submission[c].fillna("")
    for c in ans_cols:
        if answers[c].dtype == object:
            answers[c] = answers[c].fillna("")
    y_true = answers[ans_cols].to_numpy() if len(ans_cols) > 1 else answers[ans_cols[0]].to_numpy()
    y_pred = submission[sub_cols].to_numpy() if len(sub_cols) > 1 else submission[sub_cols[0]].to_numpy()
    inputs: dict[str, Any] = {}
    for key, source in spec.inputs.items():
        if isinstance(source, str):
            side, _, name = source.partition(".")
            inputs[key] = (answers if side == "answers" else submission)[name].to_numpy()
        else:
            ((side, names),) = source.items()
            inputs[key] = (answers if side == "answers" else submission)[list(names)].to_numpy()
    fn = METRICS[spec.name]
    return float(fn(y_true, y_pred, **inputs, **dict(spec.options)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("submission")
    parser.add_argument("id")
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"competition_id": args.id, "score": None, "error": None}
    try:
        result["score"] = grade(Path(args.submission), args.id, Path(args.data_dir))
    except Exception as exc:  # the published harness: any exception = invalid submission
        result["error"] = f"{type(exc).__name__}: {exc}"
    score = result["score"]
    if score is not None and not math.isfinite(score):
        result["score"] = None
        result["error"] = result["error"] or f"non-finite score {score}"
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.path.append(str(Path(__file__).resolve().parents[1] / "src"))  # after PYTHONPATH: a --src snapshot wins
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())

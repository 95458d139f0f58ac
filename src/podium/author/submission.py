"""The submission's columns of a new competition, from its targets and its metric's predictions.

A metric that scores probabilities (AUC, log loss) gets ``probability`` columns: one per target, with the 0/1
answers declared as ints; a target of labels becomes one column per class, its answers one-hot. A metric that
scores labels (accuracy, kappa, F1) gets the target's own kind and values; a regression metric ``float`` with the
target's range. Each column's ``default`` is the sample submission's value, else a constant of its kind.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from podium.author.columns import Profile, raw_spec
from podium.author.infer import Tables, Targets
from podium.author.rawfiles import Raw

__all__ = ["Columns", "submission_columns"]


@dataclass
class Columns:
    """What the declaration says of the submission: its columns, the answers' kinds, the fixture's settings."""

    columns: dict[str, Any]
    answer_columns: dict[str, Any] = field(default_factory=dict)
    fixture: dict[str, Any] = field(default_factory=dict)
    one_hot: tuple[str, list[str]] | None = None  # (the train column, its classes: the submission's columns)
    classes: dict[str, list[str]] = field(default_factory=dict)  # a label target's every value
    notes: list[str] = field(default_factory=list)


def _sample_value(tables: Tables, column: str) -> str | None:
    frame = tables.sample_frame
    if frame is None or column not in frame.columns or not len(frame):
        return None
    value = str(frame[column].iloc[0]).strip()
    return value or None


def _number(text: str | None, fallback: float) -> float | int:
    try:
        value = float(text) if text is not None else fallback
    except ValueError:
        value = fallback
    if not math.isfinite(value):
        value = fallback
    return int(value) if value.is_integer() and abs(value) < 2**53 else float(f"{value:.6g}")


def _binary(column: Profile) -> bool:
    return column.kind == "bool" or (column.kind == "int" and set(column.values) <= {"0", "1"} and bool(column.values))


def submission_columns(raw: Raw, tables: Tables, targets: Targets, prediction: str | None) -> Columns:
    """The columns of the submission (ids first) for ``prediction`` (podium.author.metric_names.PREDICTIONS; None:
    the metric is still to decide, so the targets' own kinds)."""
    out = Columns({name: raw_spec(tables.profiles[name], is_id=True) for name in targets.ids})
    if targets.one_hot is not None:
        _one_hot(out, tables, targets.one_hot, list(targets.predictions), "the sample submission's columns")
        return out
    for name in targets.sources:
        column = tables.profiles[name]
        if column.kind in ("label", "id", "date") or (column.kind == "int" and column.distinct <= 50):
            out.classes[name] = raw.distinct(tables.train, name)
        if prediction == "probability" and len(targets.sources) == 1 and name in out.classes and not _binary(column):
            classes = sorted(out.classes[name], key=_class_order)
            _one_hot(out, tables, name, classes, f"the classes of {name}")
            return out
        out.columns[name] = _column(tables, column, prediction, out)
    return out


def _class_order(value: str) -> tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _one_hot(out: Columns, tables: Tables, source: str, classes: list[str], why: str) -> None:
    share = round(1 / len(classes), 6)
    for name in classes:
        out.columns[name] = {"kind": "probability", "default": _number(_sample_value(tables, name), share)}
    out.one_hot = (source, classes)
    out.classes[source] = classes
    out.fixture["one_hot"] = classes
    out.notes.append(f"one probability column per class of {source} ({len(classes)}: {why}); its answers one-hot")


def _column(tables: Tables, column: Profile, prediction: str | None, out: Columns) -> Any:
    name, sample = column.name, _sample_value(tables, column.name)
    if prediction == "probability":
        if column.kind == "bool":
            out.answer_columns[name] = "bool"
        else:
            out.answer_columns[name] = {"kind": "int", "values": [0, 1]}
        out.fixture.setdefault("both_classes", []).append(name)
        return {"kind": "probability", "default": _number(sample, 0.5)}
    if prediction == "float" or (prediction is None and column.kind == "float"):
        mean = (column.low + column.high) / 2 if column.low is not None and column.high is not None else 0.0
        spec: dict[str, Any] = {"kind": "float", "default": _number(sample, mean)}
        if column.finite_range():
            spec["range"] = column.finite_range()
        return spec
    if prediction in ("tokens", "text", "rle", "boxes"):
        out.notes.append(f"{name}: {prediction} predictions; see docs/declaring.md for the options of its kind")
        return {"kind": prediction, "default": sample or ""}
    common = Counter(tables.train_frame[name]).most_common(1)
    default = sample or (str(common[0][0]) if common else "")
    if column.kind == "bool":
        return {"kind": "bool", "default": default or "False"}
    values = out.classes.get(name, list(column.values))
    if column.kind == "int":
        spec = {"kind": "int", "default": _number(default, 0)}
        if values and len(values) <= 50:
            spec["values"] = sorted(int(v) for v in values)
        elif column.finite_range():
            spec["range"] = column.finite_range()
        return spec
    return (
        {"kind": "label", "default": default, "values": values[:50]}
        if values
        else {"kind": "label", "default": default}
    )

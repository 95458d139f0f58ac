"""What a raw column holds, read from its cells as text: its kind (docs/declaring.md's column kinds), its range or
its values, and the ``prepare: raw:`` spec from which ``podium.fixtures.make_raw`` writes a tiny column like it.

A column is ``int`` when every non-empty cell is a whole number, ``float`` when every one is a number, ``bool``
when every one is True or False, a date when every one is an ISO date or time, ``label`` when its values repeat
(at most :data:`MAX_LABELS` of them), ``text`` when its cells are several words long, else an ``id``-like text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["MAX_LABELS", "Profile", "profile", "raw_spec", "rounded_range"]

#: The most distinct values a column may have and still be a label.
MAX_LABELS = 50
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf)", re.IGNORECASE)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*(UTC|Z|[+-]\d{2}:?\d{2})?")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Profile:
    """One column of a table's sample."""

    name: str
    kind: str  # int | float | bool | date | label | text | id
    rows: int  # cells in the sample
    empty: int  # empty cells
    distinct: int
    unique: bool  # no value twice (empty cells aside)
    values: tuple[str, ...]  # the distinct values in order of first appearance, when there are few
    examples: tuple[str, ...] = ()  # the first distinct values, whether few or many
    low: float | None = None
    high: float | None = None
    words: tuple[str, ...] = ()  # the commonest words of a text column
    word_count: tuple[int, int] = (1, 1)

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "float")

    def finite_range(self) -> list[float] | None:
        if self.low is None or self.high is None or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        return rounded_range(self.low, self.high)


def profile(name: str, cells: Sequence[str]) -> Profile:
    """The profile of a column from its cells (text, as read)."""
    filled = [c.strip() for c in cells if c.strip()]
    distinct = list(Counter(filled))
    unique = len(distinct) == len(filled) and len(filled) > 0
    examples = tuple(v[:100] for v in distinct[:20])
    base = Profile(name, "id", len(cells), len(cells) - len(filled), len(distinct), unique, (), examples)
    few = tuple(distinct) if len(distinct) <= MAX_LABELS else ()
    if filled and all(_INT.fullmatch(c) for c in distinct):
        numbers = [int(c) for c in distinct]
        return replace(base, kind="int", values=few, low=min(numbers), high=max(numbers))
    if filled and all(_FLOAT.fullmatch(c) for c in distinct):
        floats = [v for v in map(float, distinct) if math.isfinite(v)]
        low, high = (min(floats), max(floats)) if floats else (None, None)
        return replace(base, kind="float", values=few, low=low, high=high)
    if filled and {c.lower() for c in distinct} <= {"true", "false"}:
        return replace(base, kind="bool", values=few)
    if filled and all(_DATE.fullmatch(c) for c in distinct[:1000]):
        return replace(base, kind="date", values=tuple(sorted(distinct)[:: max(1, len(distinct) // 6)][:6]))
    lengths = [len(_WORD.findall(c)) for c in filled[:5000]] or [1]
    if few and len(distinct) < len(filled):
        return replace(base, kind="label", values=few)
    if sum(lengths) / len(lengths) >= 2:
        words = Counter(w for c in filled[:5000] for w in _WORD.findall(c) if len(w) <= 30)
        common = tuple(w for w, _ in words.most_common(12))
        return replace(base, kind="text", words=common, word_count=(min(lengths), min(max(lengths), 40)))
    return replace(base, kind="id" if unique else "label", values=few)


def rounded_range(low: float, high: float) -> list[float]:
    """``[low, high]`` widened to 3 significant digits, written as ints where they are whole."""

    def out(value: float, up: bool) -> float:
        if value == 0:
            return 0
        scale = 10 ** (math.floor(math.log10(abs(value))) - 2)
        edge = (math.ceil if up else math.floor)(value / scale) * scale
        return int(edge) if float(edge).is_integer() else float(f"{edge:.6g}")

    return [out(low, False), out(high, True)]


def raw_spec(column: Profile, *, is_id: bool, all_values: Sequence[str] = ()) -> Any:
    """How ``make_raw`` generates a column like this one (``all_values``: every value a label must be able to
    take, a target's classes)."""
    if is_id:
        if column.kind == "int":
            return {"kind": "int_id", "start": int(column.low or 0)}
        prefix = re.sub(r"[^A-Za-z0-9]", "", column.examples[0] if column.examples else "")[:8]
        return {"kind": "id", "prefix": prefix or column.name.lower()[:8] or "row"}
    if column.kind == "int":
        if column.values and len(column.values) <= 12:
            return {"kind": "int", "values": sorted(int(v) for v in column.values)}
        return {"kind": "int", "range": column.finite_range() or [0, 10]}
    if column.kind == "float":
        return {"kind": "float", "range": column.finite_range() or [0, 1]}
    if column.kind == "bool":
        return "bool"
    if column.kind in ("label", "date", "id"):
        values = list(all_values or column.examples) or [f"{column.name}_{i}" for i in range(3)]
        return {"kind": "label", "values": values}
    return {"kind": "text", "vocab": list(column.words) or ["word"], "count": list(column.word_count)}

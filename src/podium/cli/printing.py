"""How a command prints what it found: a plain-text table, or one JSON document."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["print_json", "table"]


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))  # -inf scores print as -Infinity


def table(rows: list[list[str]], header: list[str]) -> str:
    """``rows`` under ``header``, each column as wide as its widest cell, a rule under the header."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=False)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)

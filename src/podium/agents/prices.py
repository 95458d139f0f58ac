"""What a model's tokens cost: the dated price table in ``prices.yaml``, overridable by ``PODIUM_PRICES``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from podium.errors import UsageError

__all__ = ["Price", "price_of", "price_table"]


@dataclass(frozen=True)
class Price:
    """USD per million input, cached input and output tokens, and the table's date."""

    input: float
    cached_input: float
    output: float
    date: str

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> float:
        """The cost of one call; ``cached_tokens`` are the part of ``input_tokens`` read from the cache."""
        fresh = max(0, input_tokens - cached_tokens)
        return (fresh * self.input + cached_tokens * self.cached_input + output_tokens * self.output) / 1e6


def _read(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(
            f"price file {path}: cannot read it ({exc}). Fix: give a YAML file like podium's prices.yaml"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"price file {path}: expected a mapping of providers to models")
    return data


@cache
def price_table(override: str | None = None) -> dict[str, Any]:
    """podium's table, with the entries of ``override`` (a path; default ``$PODIUM_PRICES``) on top."""
    table = _read(Path(str(resources.files("podium") / "agents" / "prices.yaml")))
    extra = override or os.environ.get("PODIUM_PRICES")
    if extra:
        for key, value in _read(Path(extra)).items():
            if isinstance(value, dict) and isinstance(table.get(key), dict):
                table[key] = {**table[key], **value}
            else:
                table[key] = value
    return table


def price_of(provider: str, model: str, override: str | None = None) -> Price | None:
    """The price of ``model`` at ``provider``: its own entry, else its longest listed prefix; None if unknown."""
    table = price_table(override)
    models = table.get(provider) or {}
    names = [name for name in models if model == name or model.startswith(f"{name}-")]
    if not names:
        return None
    entry = models[max(names, key=len)]
    if not (isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, (int, float)) for v in entry)):
        raise UsageError(f"price of {provider}/{model}: expected [input, cached input, output] in USD per 1M tokens")
    return Price(float(entry[0]), float(entry[1]), float(entry[2]), str(table.get("date", "?")))

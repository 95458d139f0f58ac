"""The value checks of the command line's flags: each reads one flag's text, or says in one line what
it cannot read and how to write it (argparse turns that into the usage error)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime

from podium.errors import PodiumError
from podium.registry import SPLITS

#: Every split name a --split takes, from the registry (what --help lists).
SPLIT_NAMES = ", ".join(SPLITS)

__all__ = ["SPLIT_NAMES", "count", "cpus", "cutoff", "hours", "money", "number", "size", "time_limit"]


def _finite(text: str) -> float:
    """A finite number, or NaN for anything else (words, inf, nan, a number too large for a float)."""
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def number(text: str) -> float:
    """A finite number (``--temperature 0.7``); words, ``nan``, ``inf`` and numbers past a float's range are refused."""
    value = _finite(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"cannot read the number {text!r}; write a finite number, like 0.7")
    return value


def time_limit(text: str) -> float:
    """A wall-clock limit: a positive number with a unit s, m, h or d (seconds without one)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value = text.strip().lower()
    unit = value[-1:] if value[-1:] in units else "s"
    amount = _finite(value[:-1] if value[-1:] in units else value)
    if math.isnan(amount) or not math.isfinite(amount * units[unit]):
        raise argparse.ArgumentTypeError(f"cannot read the time limit {text!r}; write it like 24h, 90m, 30s or 2d")
    if amount <= 0:
        raise argparse.ArgumentTypeError(f"the time limit must be positive, got {text}")
    return amount * units[unit]


def size(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        from podium.units import parse_size

        try:
            parsed = parse_size(text)
        except PodiumError:
            raise argparse.ArgumentTypeError(
                f"cannot read the {what} {text!r}; write it like 16G, 512M or a number of bytes"
            ) from None
        if parsed is None or parsed <= 0:
            raise argparse.ArgumentTypeError(f"the {what} must be positive, got {text}")
        return parsed

    return parse


def money(text: str) -> float:
    value = _finite(text.strip().lstrip("$"))
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"the cost budget must be a positive amount of USD, got {text!r}")
    return value


def cpus(text: str) -> float:
    value = _finite(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"cannot read the CPU count {text!r}; write a number of cores, like 2 or 0.5")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the CPUs per run must be more than 0, got {text}")
    return value


def count(least: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"the {what} must be a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"the {what} must be at least {least}, got {text}")
        return value

    return parse


def hours(text: str) -> list[float]:
    """``1,2,4.5``: positive hours, for ``report --hours``."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"give hours as numbers separated by commas, e.g. 1,2,4,8,24; got {text!r}"
        ) from None
    if not values or any(not v > 0 or v != v or v == float("inf") for v in values):
        raise argparse.ArgumentTypeError(f"give positive hours, e.g. 1,2,4,8,24; got {text!r}")
    return values


def cutoff(text: str) -> date:
    """``--ended-after``: a model's training cutoff, a day written YYYY-MM-DD and not after today (UTC)."""
    value = text.strip()
    try:
        day = date.fromisoformat(value) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) else None
    except ValueError:
        day = None
    if day is None:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a date. Fix: write the model's training cutoff as YYYY-MM-DD, e.g. 2023-10-01"
        )
    today = datetime.now(UTC).date()
    if day > today:
        raise argparse.ArgumentTypeError(
            f"{value} is in the future (today is {today}), so no competition has ended after it. Fix: give the "
            "model's training cutoff, a day on or before today"
        )
    return day

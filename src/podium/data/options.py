"""The pieces of a ``prepare:`` declaration that are passed on to pandas or numpy: ``read:`` (the
``read_csv`` options), ``write:`` (the ``to_csv`` options), computed ``assign:`` columns and the
random columns they draw, and the error every declaration problem raises.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "QUOTING",
    "READ_MODES",
    "SpecError",
    "check_keys",
    "column_names",
    "computed_column",
    "draw",
    "read_options",
    "write_options",
]

#: ``read:`` shorthands: how pandas reads the cells (``text``: every cell as written; ``pandas``: its defaults).
READ_MODES: dict[str, dict[str, Any]] = {"text": {"dtype": str, "keep_default_na": False}, "pandas": {}}


_READ_OPTIONS = frozenset({"dtype", "keep_default_na", "na_values", "sep", "float_precision"})

#: ``write:`` keys: the ``to_csv`` options a declaration may pass (``index: true`` writes pandas' row labels).
_WRITE_OPTIONS = frozenset({"sep", "float_format", "index", "quoting"})

#: ``write: {quoting: ...}``: the csv module's quoting styles by name.
QUOTING = {
    "minimal": csv.QUOTE_MINIMAL,
    "all": csv.QUOTE_ALL,
    "nonnumeric": csv.QUOTE_NONNUMERIC,
    "none": csv.QUOTE_NONE,
}

#: ``assign: {column: {random: ...}}``: the generators and their draws.
RANDOM_RNGS = ("RandomState", "default_rng")


RANDOM_DRAWS = ("randint", "uniform")


class SpecError(ValueError):
    """A ``prepare:`` declaration that cannot be run; the message names the key."""


def column_names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise SpecError(f"{where}: expected a list of column names, got {value!r}")
    return tuple(str(v) for v in value)


def check_keys(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")


def read_options(read: Any, where: str = "read") -> dict[str, Any]:
    """pandas ``read_csv`` keyword arguments for a ``read:`` declaration (``"str"`` means Python's str;
    ``float_precision: round_trip`` is passed only where it is not pandas' default, as
    ``podium.grading.published.pandas_read_options``)."""
    if isinstance(read, str):
        if read not in READ_MODES:
            raise SpecError(f"{where}: {read!r} is not one of {sorted(READ_MODES)} (or a mapping of read_csv options)")
        return dict(READ_MODES[read])
    if not isinstance(read, Mapping):
        raise SpecError(f"{where}: expected {sorted(READ_MODES)} or a mapping, got {read!r}")
    check_keys(read, set(_READ_OPTIONS), where)
    options = dict(read)
    dtype = options.get("dtype")
    if dtype == "str":
        options["dtype"] = str
    elif isinstance(dtype, Mapping):
        options["dtype"] = {str(k): str if v == "str" else v for k, v in dtype.items()}
    if "float_precision" in options:
        from podium.grading.published import pandas_read_options

        if options.pop("float_precision") != "round_trip":
            raise SpecError(f"{where}: float_precision: round_trip is the one value (the published harness's)")
        options.update(pandas_read_options())
    return options


def write_options(write: Any, where: str = "write") -> dict[str, Any]:
    """pandas ``to_csv`` keyword arguments for a ``write:`` declaration."""
    if write is None:
        return {}
    if not isinstance(write, Mapping):
        raise SpecError(f"{where}: expected a mapping of to_csv options {sorted(_WRITE_OPTIONS)}, got {write!r}")
    check_keys(write, set(_WRITE_OPTIONS), where)
    options = dict(write)
    if "quoting" in options:
        if options["quoting"] not in QUOTING:
            raise SpecError(f"{where}: quoting is one of {sorted(QUOTING)}, got {options['quoting']!r}")
        options["quoting"] = QUOTING[options["quoting"]]
    return options


def computed_column(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A checked computed assignment: ``{format: TEMPLATE}`` (a Python format string over the row),
    ``{column: NAME}`` (that column's values) or ``{random: ...}`` (see ``draw``)."""
    kinds = [k for k in ("format", "column", "random") if k in value]
    if len(kinds) != 1:
        raise SpecError(f"{where}: a computed column is one of {{format: ...}}, {{column: ...}}, {{random: ...}}")
    if kinds[0] != "random":
        check_keys(value, {kinds[0]}, where)
        return {kinds[0]: str(value[kinds[0]])}
    check_keys(value, {"random", "low", "high", "seed", "rng", "round"}, where)
    missing = [k for k in ("random", "low", "high", "seed", "rng") if k not in value]
    if missing:
        raise SpecError(f"{where}: a random column needs {missing} (random, low, high, seed, rng; round optional)")
    if value["random"] not in RANDOM_DRAWS or value["rng"] not in RANDOM_RNGS:
        raise SpecError(f"{where}: random is one of {RANDOM_DRAWS} and rng one of {RANDOM_RNGS}, got {dict(value)}")
    return dict(value)


def draw(value: Mapping[str, Any], n: int) -> np.ndarray:
    """The ``n`` values of a random column: one generator seeded ``seed``, one call of size ``n``
    (``RandomState(seed).randint(low, high, size=n)``, ``default_rng(seed).uniform(low, high, n)``, ...),
    rounded to ``round`` decimals when given."""
    low, high = value["low"], value["high"]
    if value["rng"] == "RandomState":
        legacy = np.random.RandomState(value["seed"])
        values = legacy.randint(low, high, size=n) if value["random"] == "randint" else legacy.uniform(low, high, n)
    else:
        rng = np.random.default_rng(value["seed"])
        values = rng.integers(low, high, size=n) if value["random"] == "randint" else rng.uniform(low, high, n)
    if value.get("round") is not None:
        values = values.round(int(value["round"]))
    return np.asarray(values)

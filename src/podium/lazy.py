"""Public names a package loads on first use (PEP 562), so that importing the package costs only what is used.

``podium --help`` and ``podium list`` import the command line, the registry and nothing that grades (issue 44):
a package whose ``__init__`` would pull in numpy, pyarrow, the environment builder or the agents' model clients
declares where each name lives instead, and :func:`exports` gives it the module ``__getattr__`` and ``__dir__``
that import the defining module when a name is first read (type checkers read the names from an
``if TYPE_CHECKING:`` block beside it)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(
    package: str, namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(``__getattr__``, ``__dir__``) for ``package`` whose public names live in the modules ``where`` names: each
    a module path, or ``module:attribute`` where the name is another one there. A name read is kept in
    ``namespace`` (the package's globals), so it is imported once."""

    def getattr_(name: str) -> Any:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = found.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace.get("__all__", ()), *where})

    return getattr_, dir_

"""Where competitions are declared: podium's own folder, and a user's folders of declarations.

A declaration is a folder holding ``competition.yaml`` (and the files beside it: descriptions, ``leaderboard.json``,
``prepare.py``, ``hooks.py``); docs/declaring.md. podium's own are in the package (:data:`BUILTIN_DIR`). A user
names folders of their own with ``--competitions-dir DIR`` (any command that takes competitions) or
``PODIUM_COMPETITIONS_PATH`` (colon-separated); each is a folder of declarations, one sub-folder per competition,
or one declaration itself. The flag is written into the variable (:func:`use_dirs`), so every process podium starts
(a grading child, a cluster's driver, a gym's worker) finds the same ones.

A user's id may not shadow a built-in one, and two folders may not declare one id: either is refused in one line
naming both places, since a benchmark whose ``spaceship-titanic`` means two things cannot be compared with itself.
A declaration's content hash (:func:`digest`) names exactly what graded a run; its record keeps it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from podium.competition import COMPETITIONS_DIR as BUILTIN_DIR
from podium.errors import RegistryError, UsageError

__all__ = [
    "BUILTIN",
    "BUILTIN_DIR",
    "PATH_VARIABLE",
    "TODO",
    "digest",
    "folders",
    "source_of",
    "todos",
    "use_dirs",
    "user_dirs",
]

#: The colon-separated folders of a user's declarations.
PATH_VARIABLE = "PODIUM_COMPETITIONS_PATH"
#: The source of podium's own declarations, as `podium list` and a record name it.
BUILTIN = "built-in"
#: How a value the author must still decide starts (``podium new`` writes them; every command refuses them).
TODO = "TODO:"
_DECLARATION = "competition.yaml"
#: What a declaration's digest leaves out: what Python and editors leave beside the files.
_NOT_DECLARED = ("__pycache__", ".DS_Store")


def user_dirs() -> tuple[Path, ...]:
    """The folders ``PODIUM_COMPETITIONS_PATH`` names, in its order."""
    raw = os.environ.get(PATH_VARIABLE, "")
    return tuple(Path(part).expanduser().absolute() for part in raw.split(os.pathsep) if part.strip())


def use_dirs(dirs: Iterable[str | os.PathLike[str]]) -> None:
    """Add ``dirs`` (``--competitions-dir``) to the folders this process and those it starts read declarations
    from; a name that is not a folder is one line naming it."""
    added: list[Path] = []
    for given in dirs:
        path = Path(given).expanduser()
        if not path.is_dir():
            raise UsageError(
                f"--competitions-dir {str(given)!r} is not a folder. Fix: name a folder of competition folders (each "
                f"with its {_DECLARATION}; `podium new ID --out DIR` writes one), or one competition's folder."
            )
        added.append(path.absolute())
    merged = list(dict.fromkeys([*user_dirs(), *added]))
    if merged:
        os.environ[PATH_VARIABLE] = os.pathsep.join(str(path) for path in merged)


def folders() -> Mapping[str, Path]:
    """Every declared competition's folder by its id: podium's own, then the user's folders'."""
    return _folders(user_dirs())


@cache
def _folders(dirs: tuple[Path, ...]) -> Mapping[str, Path]:
    found = {path.name: path for path in _declared(BUILTIN_DIR)}
    builtin = set(found)
    for root in dirs:
        if not root.is_dir():
            raise UsageError(
                f"{PATH_VARIABLE} names {str(root)!r}, which is not a folder. Fix: remove it from the variable, or "
                "make the folder."
            )
        for folder in [root] if (root / _DECLARATION).is_file() else _declared(root):
            cid = folder.name
            if cid in builtin:
                raise RegistryError(
                    f"{folder}: the competition {cid!r} would shadow podium's built-in {cid}. Fix: give yours an id of "
                    f"its own (the folder's name and the id: in its {_DECLARATION})."
                )
            if cid in found:
                raise RegistryError(f"{folder} and {found[cid]} both declare {cid!r}. Fix: keep one of them.")
            found[cid] = folder
    return found


def _declared(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / _DECLARATION).is_file())


def source_of(folder: Path) -> str:
    """Where a declaration comes from: ``built-in``, or the user's folder that holds it."""
    return BUILTIN if folder.parent == BUILTIN_DIR else str(folder)


def digest(folder: Path) -> str:
    """The sha256 of a declaration folder's files: each one's path and content, in path order (links and
    caches left out), so that the same declaration anywhere has the same digest and any edit changes it."""
    return _digest(folder, _stamp(folder))


def _stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    return tuple((str(p), s.st_mtime_ns, s.st_size) for p, s in ((p, p.stat()) for p in _files(folder)))


@cache
def _digest(folder: Path, stamp: tuple[tuple[str, int, int], ...]) -> str:
    total = hashlib.sha256()
    for path in _files(folder):
        name = path.relative_to(folder).as_posix().encode()
        total.update(len(name).to_bytes(4, "big") + name)
        total.update(hashlib.sha256(path.read_bytes()).digest())
    return total.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink() and not any(part in _NOT_DECLARED for part in p.parts)
    )


def todos(data: Any, where: str = "") -> list[str]:
    """Each value of a parsed declaration that still starts with ``TODO:``, as ``key.path (TODO: what)``."""
    if isinstance(data, str):
        return [f"{where or 'the declaration'} ({data.strip()[:120]})"] if data.strip().startswith(TODO) else []
    if isinstance(data, Mapping):
        return [item for key, value in data.items() for item in todos(value, f"{where}.{key}" if where else str(key))]
    if isinstance(data, list):
        return [item for index, value in enumerate(data) for item in todos(value, f"{where}[{index}]")]
    return []

"""The declarations a bundle's runs were graded by: named in the manifest, carried when they are the author's own,
and checked by ``bundle verify`` against each record and against the verifier's own.

``bundle create`` names every competition's declaration by its digest (:func:`podium.declarations.digest`), and
carries a user's own (``--competitions-dir``) under ``competitions/<id>/``: podium's built-in ones the verifier
has already. ``bundle verify`` compares the digest each record names with the declaration it re-grades with: the
verifier's own where it knows the id (a different one is a difference, and the runs are graded by the verifier's),
else the bundle's copy, which must be the one the records name. A bundled declaration is hostile input like every
member: its YAML is read bounded and without aliases, and one that holds Python (``prepare.py``, ``hooks.py``) is
never loaded, since verify never runs code from a bundle; its runs are then not re-graded, which is a difference
that says how to give verify a copy the verifier trusts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from podium import declarations, registry
from podium.errors import PodiumError
from podium.publish.tarstream import check_name
from podium.publish.unpack import shown

__all__ = ["DECLARATIONS", "bundled_declarations", "declaration_entries"]

#: Where a bundle carries the author's own declarations.
DECLARATIONS = "competitions"
#: The largest ``competition.yaml`` of a bundle's that is read.
_MAX_YAML = 1 << 20


def declaration_entries(competition_ids: set[str]) -> dict[str, dict[str, Any]]:
    """The manifest's ``declarations``: each competition's digest and source, and for a user's own where the bundle
    carries it (:data:`DECLARATIONS`)."""
    entries: dict[str, dict[str, Any]] = {}
    for cid in sorted(competition_ids):
        folder = registry.get(cid).folder
        own = declarations.source_of(folder) != declarations.BUILTIN
        entries[cid] = {"sha256": declarations.digest(folder), "source": "user" if own else "built-in"}
        if own:
            entries[cid]["bundled"] = f"{DECLARATIONS}/{cid}"
    return entries


def own_folders(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Path]:
    """The folders of the user's own declarations among ``entries``, by the place the bundle gives each."""
    return {str(e["bundled"]): registry.get(cid).folder for cid, e in entries.items() if e.get("bundled")}


@contextlib.contextmanager
def bundled_declarations(
    root: Path, records: Mapping[str, Mapping[str, Any] | None], differ: Callable[[str], None]
) -> Iterator[set[str]]:
    """While open: the bundle's own declarations (under ``root``) that the verifier does not have are loaded by the
    registry; yields the competitions whose runs cannot be re-graded here (each said as a difference). Every
    record's declaration digest is compared with the one its runs are re-graded by."""
    named = _named(records)
    known = set(registry.ids())
    loadable = root / ".declarations"
    cannot: set[str] = set()
    for cid, digests in sorted(named.items()):
        if check_name(cid) is not None or "/" in cid:
            continue  # not a competition id: the run's own checks say so
        if cid in known:
            mine = declarations.digest(registry.get(cid).folder)
            _compare(cid, digests, mine, "yours", differ)
            continue
        problem = _bundled_problem(root / DECLARATIONS / cid, cid)
        if problem is not None:
            differ(f"not verified: cannot re-grade {shown(cid)}: {problem}")
            cannot.add(cid)
            continue
        folder = shutil.copytree(root / DECLARATIONS / cid, loadable / cid, symlinks=True)
        _compare(cid, digests, declarations.digest(folder), "the bundle's", differ)
    before = os.environ.get(declarations.PATH_VARIABLE)
    try:
        if loadable.is_dir():
            declarations.use_dirs([loadable])
        yield cannot
    finally:
        if before is None:
            os.environ.pop(declarations.PATH_VARIABLE, None)
        else:
            os.environ[declarations.PATH_VARIABLE] = before


def _named(records: Mapping[str, Mapping[str, Any] | None]) -> dict[str, set[str | None]]:
    """Each competition the records name, with the declaration digests they name (None: a record without one)."""
    named: dict[str, set[str | None]] = {}
    for record in records.values():
        if record is None:
            continue
        declared = record.get("declaration")
        digest = declared.get("sha256") if isinstance(declared, dict) else None
        named.setdefault(str(record.get("competition_id")), set()).add(digest if isinstance(digest, str) else None)
    return named


def _compare(cid: str, digests: set[str | None], used: str, whose: str, differ: Callable[[str], None]) -> None:
    for digest in sorted(d for d in digests if d is not None and d != used):
        differ(
            f"declaration: {shown(cid)}: its runs were graded by the declaration sha256 {shown(digest, 16)}..., "
            f"{whose} is {used[:16]}... (`podium show {shown(cid)}`): graded again by {whose}"
        )


def _bundled_problem(folder: Path, cid: str) -> str | None:
    """Why the bundle's copy of ``cid``'s declaration cannot be loaded (None: it can)."""
    if not (folder / "competition.yaml").is_file() or folder.is_symlink():
        return (
            f"podium has no declaration of it and the bundle carries none; give one with --competitions-dir DIR "
            f"(a folder holding {shown(cid)}/competition.yaml)"
        )
    python = sorted(p.name for p in folder.rglob("*.py"))
    if python:
        return (
            f"its declaration holds Python ({', '.join(shown(p, 40) for p in python[:5])}), which verify never runs "
            "from a bundle; give a copy you trust with --competitions-dir DIR"
        )
    text = folder / "competition.yaml"
    if text.stat().st_size > _MAX_YAML:
        return f"its bundled competition.yaml is over {_MAX_YAML} bytes"
    try:
        _no_aliases(text.read_bytes())
    except PodiumError as exc:
        return f"its bundled competition.yaml {exc}"
    return None


def _no_aliases(data: bytes) -> None:
    """Refuse YAML that is not YAML, or that repeats a node by alias (a few lines can expand to gigabytes)."""
    import yaml

    try:
        for event in yaml.parse(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.AliasEvent):
                raise PodiumError("repeats a node by alias (*name), which a bundled declaration may not")
    except yaml.YAMLError as exc:
        raise PodiumError(f"is not YAML ({' '.join(str(exc).split())[:200]})") from None

"""Checksums of prepared data.

Every file directly in ``public/`` or ``private/`` gets its sha256; a folder gets one manifest
hash (the sha256 of its sorted "relative-path sha256" lines), so folders of thousands of images
are compared with one value while any changed, added or removed file still changes it.

A competition may ship the checksums of its real prepared data: ``checksums.json`` beside its
declaration, ``{"<data version>": {path: checksum}}``, without ``public/description.md`` (podium's
own text, which ``prepare --obfuscated`` swaps). ``podium verify`` and ``prepare --from-mlebench``
compare against them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from podium.competition import Competition

__all__ = ["DESCRIPTION", "compare", "digest_tree", "file_sha256", "reference_checksums", "without_description"]

_CHUNK = 1 << 20
#: The one prepared file that is podium's own text rather than the competition's data.
DESCRIPTION = "public/description.md"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _hashed(path: Path, done: Callable[[int], None] | None) -> str:
    digest = file_sha256(path)
    if done is not None:
        done(path.stat().st_size)
    return digest


def _folder_manifest(folder: Path, done: Callable[[int], None] | None = None) -> str:
    lines = [f"{p.relative_to(folder).as_posix()} {_hashed(p, done)}" for p in sorted(folder.rglob("*")) if p.is_file()]
    return "manifest:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()


def digest_tree(
    prepared: Path, sides: tuple[str, ...] = ("public", "private"), *, done: Callable[[int], None] | None = None
) -> dict[str, str]:
    """Checksums of ``public/`` and ``private/`` (or only ``sides``) under ``prepared``: path -> sha256 or
    manifest hash. ``done`` is called with each file's size once it is hashed (progress on long work)."""
    out: dict[str, str] = {}
    for side in sides:
        for entry in sorted((prepared / side).iterdir()):
            key = f"{side}/{entry.name}"
            out[key + ("/" if entry.is_dir() else "")] = (
                _folder_manifest(entry, done) if entry.is_dir() else _hashed(entry, done)
            )
    return out


def without_description(checksums: Mapping[str, str]) -> dict[str, str]:
    """The checksums of the competition's data: all but podium's description."""
    return {path: value for path, value in checksums.items() if path != DESCRIPTION}


def reference_checksums(competition: Competition) -> dict[str, str] | None:
    """The checksums of the competition's real prepared data at its data version (``checksums.json``
    beside its declaration), or None where podium records none."""
    path = competition.folder / "checksums.json"
    if not path.is_file():
        return None
    recorded = json.loads(path.read_text(encoding="utf-8")).get(str(competition.data_version))
    return without_description(recorded) if recorded else None


def compare(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """Human-readable differences between two checksum maps (empty when they agree)."""
    problems = [f"missing: {k}" for k in sorted(expected.keys() - actual.keys())]
    problems += [f"unexpected: {k}" for k in sorted(actual.keys() - expected.keys())]
    problems += [
        f"changed: {k} (expected {expected[k][:16]}..., found {actual[k][:16]}...)"
        for k in sorted(expected.keys() & actual.keys())
        if expected[k] != actual[k]
    ]
    return problems

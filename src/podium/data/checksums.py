"""Checksums of prepared data.

Every file directly in ``public/`` or ``private/`` gets its sha256; a folder gets one manifest
hash (the sha256 of its sorted "relative-path sha256" lines), so folders of thousands of images
are compared with one value while any changed, added or removed file still changes it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["compare", "digest_tree", "file_sha256"]

_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _folder_manifest(folder: Path) -> str:
    lines = [f"{p.relative_to(folder).as_posix()} {file_sha256(p)}" for p in sorted(folder.rglob("*")) if p.is_file()]
    return "manifest:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()


def digest_tree(prepared: Path, sides: tuple[str, ...] = ("public", "private")) -> dict[str, str]:
    """Checksums of ``public/`` and ``private/`` (or only ``sides``) under ``prepared``: path -> sha256 or
    manifest hash."""
    out: dict[str, str] = {}
    for side in sides:
        for entry in sorted((prepared / side).iterdir()):
            key = f"{side}/{entry.name}"
            out[key + ("/" if entry.is_dir() else "")] = (
                _folder_manifest(entry) if entry.is_dir() else file_sha256(entry)
            )
    return out


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

"""Reading the files of a run safely: no symbolic link followed (files opened with ``O_NOFOLLOW``), a file of
several hard links refused where asked, walks bounded to :data:`MAX_FILES` files and :data:`MAX_DEPTH` folders
deep, reads bounded to a number of bytes. :class:`~podium.audit.context.AuditContext` reads through these."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from podium import untrusted

__all__ = [
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_HASHED",
    "MAX_READ",
    "file_sha256",
    "is_real_dir",
    "logged_calls",
    "read_bounded",
    "walk_files",
]

#: The most files a walk of one of the agent's folders visits.
MAX_FILES = 5000
#: The deepest a walk goes below the folder it starts at.
MAX_DEPTH = 12
#: The most bytes read from one file (the rest is ignored, and the read says so by its length).
MAX_READ = 8 << 20
#: The largest file hashed whole (a submission; what grading accepts is far smaller).
MAX_HASHED = 4 << 30


def logged_calls(path: Path, limit: int) -> tuple[Mapping[str, Any], ...]:
    """The JSON objects of a service's log (one a line; a line that is not one is left out), read bounded."""
    data = read_bounded(path, limit, single_link=True)
    return tuple(call for call in untrusted.iter_json_lines((data or b"").splitlines()) if call is not None)


def read_bounded(path: Path, limit: int = MAX_READ, *, single_link: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path`` (:func:`podium.untrusted.read_bounded`, with the audit's
    default cap)."""
    return untrusted.read_bounded(path, limit, single_link=single_link)


def file_sha256(path: Path, *, single_link: bool = False) -> str | None:
    """The SHA-256 of the regular file ``path``, read whole without following a link; None when it is no such file
    (or, with ``single_link``, a file with more than one hard link)."""
    chunks = untrusted.iter_chunks(path, single_link=single_link)
    if chunks is None:
        return None
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def walk_files(root: Path, suffixes: tuple[str, ...] | None, hard_links: list[Path] | None = None) -> tuple[Path, ...]:
    """Regular files under ``root`` (no links followed, bounded), in path order. Given ``hard_links``, a file with
    more than one hard link is left out and added to it instead."""
    if not is_real_dir(root):
        return ()
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack and len(found) < MAX_FILES:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if depth < MAX_DEPTH:
                    stack.append((Path(entry.path), depth + 1))
            elif entry.is_file(follow_symlinks=False) and (suffixes is None or entry.name.endswith(suffixes)):
                if hard_links is not None and _links(entry) > 1:
                    hard_links.append(Path(entry.path))
                    continue
                found.append(Path(entry.path))
                if len(found) >= MAX_FILES:
                    break
    return tuple(sorted(found))


def _links(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_nlink
    except OSError:
        return 0


def is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False

"""Opening a file that someone else wrote without being led anywhere else by it.

A run folder, an unpacked bundle or a node's tar holds names an agent chose: a link to the private answers or a
host secret, a FIFO that never ends, a device, a file with a second name (a hard link to something podium must
not read). Every reader here opens with ``O_NOFOLLOW`` (and :func:`open_beneath` every component of the path
relative to its parent's descriptor, so no link at any level is followed), then checks with ``fstat`` on the
open descriptor that it is a regular file, and reads through that descriptor only, bounded.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = ["iter_chunks", "open_beneath", "open_regular", "read_bounded", "regular_size"]

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None, single_link: bool = False) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file (and with ``single_link``, one with no other
    hard link); None for a link, a folder, a FIFO, a device, a socket, a missing or unreadable file. The caller
    closes the descriptor. The last component is never followed; :func:`open_beneath` covers every component."""
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except (OSError, ValueError):  # ValueError: a name with a NUL byte
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (single_link and info.st_nlink > 1):
        os.close(fd)
        return None
    return fd


def open_beneath(
    root: str | os.PathLike[str], relative: str | os.PathLike[str], *, single_link: bool = False
) -> int | None:
    """:func:`open_regular` of ``root/relative`` with every component opened relative to its parent's descriptor
    with ``O_NOFOLLOW``: a link anywhere below ``root`` (or ``..``, or an absolute ``relative``) gives None."""
    parts = PurePosixPath(os.fspath(relative)).parts
    if not parts or parts[0] == "/" or ".." in parts:
        return None
    try:
        current = os.open(root, _DIR_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=current)
            except (OSError, ValueError):
                return None
            os.close(current)
            current = child
        return open_regular(parts[-1], dir_fd=current, single_link=single_link)
    finally:
        os.close(current)


def iter_chunks(
    path: str | os.PathLike[str], limit: int | None = None, *, single_link: bool = False
) -> Iterator[bytes] | None:
    """The regular file ``path`` in chunks, at most ``limit`` bytes in all (None: to its end as seen when opened);
    None when :func:`open_regular` refuses it. The descriptor is closed when the iterator ends or is closed."""
    fd = open_regular(path, single_link=single_link)
    if fd is None:
        return None
    size = os.fstat(fd).st_size  # a file that grows while read is read to the size seen at opening
    return _chunks(fd, size if limit is None else min(limit, size))


def _chunks(fd: int, left: int) -> Iterator[bytes]:
    try:
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        os.close(fd)


def read_bounded(path: str | os.PathLike[str], limit: int, *, single_link: bool = False) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``path``; None when :func:`open_regular` refuses it."""
    chunks = iter_chunks(path, limit, single_link=single_link)
    return None if chunks is None else b"".join(chunks)


def regular_size(path: str | os.PathLike[str] | Path, *, single_link: bool = False) -> int | None:
    """The size of ``path`` when it is a regular file (not a link; with ``single_link``, of one hard link)."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(info.st_mode) or (single_link and info.st_nlink > 1):
        return None
    return info.st_size

"""Opening a file that someone else wrote without being led anywhere else by it.

A run folder, an unpacked bundle or a node's tar holds names an agent chose: a link to the private answers or a
host secret, a FIFO that never ends, a device, a file with a second name (a hard link to something podium must
not read). Every reader here opens with ``O_NOFOLLOW`` (and :func:`open_beneath` every component of the path
relative to its parent's descriptor, so no link at any level is followed), then checks with ``fstat`` on the
open descriptor that it is a regular file, and reads through that descriptor only, bounded.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

__all__ = [
    "NotOpened", "iter_chunks", "open_beneath", "open_file", "open_file_beneath", "open_regular", "read_bounded",
    "regular_size",
]  # fmt: skip

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


class NotOpened(Exception):
    """Why :func:`open_file` or :func:`open_file_beneath` refused, for a caller that says why in its own words.

    ``reason`` is one of: ``missing`` (nothing there), ``link`` (a symbolic link), ``directory``, ``fifo``,
    ``socket``, ``device``, ``hard_link`` (a regular file with another name, refused with ``single_link``),
    ``root`` (the folder itself is missing, a link or not a folder: ``errno`` tells which), ``below`` (``part``, a
    component between the folder and the file, is a link or not a folder), ``name`` (an absolute path, ``..`` or
    an empty name) or ``unreadable`` (any other error: ``detail`` is its text). ``info`` is the file's ``fstat``
    where it was opened."""

    def __init__(
        self, reason: str, *, part: str | None = None, errno: int | None = None, detail: str = "",
        info: os.stat_result | None = None,
    ) -> None:  # fmt: skip
        super().__init__(reason if not detail else f"{reason}: {detail}")
        self.reason, self.part, self.errno, self.detail, self.info = reason, part, errno, detail, info


def _kind(mode: int) -> str | None:
    """The refusal for a file of ``mode`` (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISLNK, "link"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket")):  # fmt: skip
        if test(mode):
            return name
    return "device"


def open_file(path: str | os.PathLike[str], *, dir_fd: int | None = None, single_link: bool = False) -> int:
    """A read-only descriptor of ``path`` (relative to ``dir_fd`` when given) when it is a regular file (with
    ``single_link``: with no other hard link), else :class:`NotOpened` saying why. The last component is never
    followed, and the kind is checked with ``fstat`` on the descriptor itself, so a file swapped for a link or a
    FIFO between a check and the open changes nothing. The caller closes the descriptor."""
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except ValueError:  # a name with a NUL byte
        raise NotOpened("name", detail="a name with a NUL byte") from None
    except OSError as exc:
        reason = {errno.ENOENT: "missing", errno.ELOOP: "link", errno.ENOTDIR: "missing"}.get(exc.errno or 0)
        if reason is None:  # a socket (ENXIO), a device with no driver: say what it is where lstat can tell
            try:
                reason = _kind(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            except (OSError, ValueError):
                reason = None
        raise NotOpened(reason or "unreadable", errno=exc.errno, detail=exc.strerror or str(exc)) from None
    info = os.fstat(fd)
    refusal = _kind(info.st_mode) or ("hard_link" if single_link and info.st_nlink > 1 else None)
    if refusal is not None:
        os.close(fd)
        raise NotOpened(refusal, info=info)
    return fd


def open_file_beneath(
    root: str | os.PathLike[str], relative: str | os.PathLike[str], *, single_link: bool = False
) -> int:
    """:func:`open_file` of ``root/relative`` with every component below ``root`` opened relative to its
    parent's descriptor with ``O_NOFOLLOW``: a link anywhere below ``root`` is refused, and so are ``..``, ``.``
    and an absolute ``relative`` (:class:`NotOpened`). ``root`` itself is not followed either."""
    parts = PurePosixPath(os.fspath(relative)).parts
    if not parts or parts[0] == "/" or any(p in ("..", ".") for p in parts):
        raise NotOpened("name", detail=f"{os.fspath(relative)!r} is not a relative path without '..'")
    try:
        current = os.open(root, _DIR_FLAGS)
    except (OSError, ValueError) as exc:
        code = exc.errno if isinstance(exc, OSError) else None
        raise NotOpened("root", errno=code, detail=getattr(exc, "strerror", None) or str(exc)) from None
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=current)
            except (OSError, ValueError) as exc:
                code = exc.errno if isinstance(exc, OSError) else None
                reason = (
                    "missing"
                    if code == errno.ENOENT
                    else "below"
                    if code in (errno.ELOOP, errno.ENOTDIR)
                    else "unreadable"
                )
                raise NotOpened(
                    reason, part=part, errno=code, detail=getattr(exc, "strerror", None) or str(exc)
                ) from None
            os.close(current)
            current = child
        return open_file(parts[-1], dir_fd=current, single_link=single_link)
    finally:
        os.close(current)


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None, single_link: bool = False) -> int | None:
    """:func:`open_file`, with None for every refusal (a link, a folder, a FIFO, a device, a socket, a missing or
    unreadable file). The caller closes the descriptor."""
    try:
        return open_file(path, dir_fd=dir_fd, single_link=single_link)
    except NotOpened:
        return None


def open_beneath(
    root: str | os.PathLike[str], relative: str | os.PathLike[str], *, single_link: bool = False
) -> int | None:
    """:func:`open_file_beneath`, with None for every refusal (a link anywhere below ``root``, ``..``, an
    absolute ``relative``, anything but a regular file)."""
    try:
        return open_file_beneath(root, relative, single_link=single_link)
    except NotOpened:
        return None


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

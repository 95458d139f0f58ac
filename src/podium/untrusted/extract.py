"""Writing exactly the members :func:`~podium.untrusted.archive.read_members` accepts, and nothing else.

:func:`extract` creates each member itself below one folder's descriptor: every parent is opened component by
component relative to its own parent with ``O_NOFOLLOW`` (a link where a folder should be stops it), every new
name is made with ``O_EXCL`` (or ``mkdir``/``symlink``, which never replace), links are made as links and
never resolved, modes lose their set-id and write-for-others bits, and the first refused member stops it with
:class:`~podium.untrusted.tarheaders.ArchiveRefused` naming the member and why. :func:`extract_fresh` extracts
into a folder it creates and removes that folder again on any failure, so no half-written tree stays.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Collection
from pathlib import Path
from typing import BinaryIO

from podium.errors import quote
from podium.untrusted.archive import ArchivePolicy, Member, read_members
from podium.untrusted.tarheaders import ArchiveRefused

__all__ = ["extract", "extract_fresh"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PATH_MAX = 4096


def _refuse(member: Member, why: str) -> ArchiveRefused:
    return ArchiveRefused(f"member {quote(member.name, 200)}: {why}")


class _Writer:
    """Members created below one folder's descriptor; the folder last written into is kept open."""

    def __init__(self, root_fd: int, root_bytes: int, policy: ArchivePolicy) -> None:
        self.root_fd, self.root_bytes, self.policy = root_fd, root_bytes, policy
        self.parent: tuple[tuple[str, ...], int] = ((), root_fd)

    def close(self) -> None:
        if self.parent[1] != self.root_fd:
            os.close(self.parent[1])
        self.parent = ((), self.root_fd)

    def parent_fd(self, parts: tuple[str, ...], member: Member) -> int:
        if parts == self.parent[0]:
            return self.parent[1]
        self.close()
        fd = os.dup(self.root_fd)
        try:
            for index, part in enumerate(parts):
                try:
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if self.policy.parents_first:
                        raise _refuse(
                            member, f"its folder {quote('/'.join(parts[: index + 1]))} was not made"
                        ) from None
                    os.mkdir(part, 0o755, dir_fd=fd)  # a folder the archive implies (a bundle lists files only)
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    where = quote("/".join(parts[: index + 1]), 200)
                    raise _refuse(member, f"it lies below {where}, which is a symbolic link or a file") from None
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        self.parent = (parts, fd)
        return fd

    def create(self, member: Member) -> None:
        parts = tuple(member.name.split("/"))
        if self.root_bytes + 1 + len(os.fsencode(member.name)) >= _PATH_MAX:
            raise _refuse(member, f"a path of {_PATH_MAX:,} bytes or more where it would land")
        parent = self.parent_fd(parts[:-1], member)
        name = parts[-1]
        try:
            if member.kind == "folder":
                os.mkdir(name, (member.mode & 0o755) | 0o700, dir_fd=parent)
            elif member.kind == "link":
                os.symlink(member.linkname, name, dir_fd=parent)
                with contextlib.suppress(OSError, OverflowError, ValueError):
                    os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)
            else:
                self.file(member, parent, name)
        except FileExistsError:
            raise _refuse(member, "a second member of the same name") from None

    def file(self, member: Member, parent: int, name: str) -> None:
        mode = (member.mode & 0o755) | 0o600
        fd = os.open(name, _CREATE_FLAGS, mode, dir_fd=parent)
        try:
            for chunk in member.chunks():
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            with contextlib.suppress(OSError, OverflowError, ValueError):
                os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)


def extract(
    stream: BinaryIO,
    destination: Path,
    policy: ArchivePolicy,
    *,
    cap: int | None = None,
    reserved: Collection[str] = (),
    cap_hint: str = "",
) -> int:
    """Write the tar read from ``stream`` into the existing folder ``destination``; the members made.

    The first refused member raises :class:`ArchiveRefused`; what was made before it stays for the caller to
    remove (:func:`extract_fresh` does). ``reserved`` names no member may take at the top (files the caller
    writes there itself); ``cap`` bounds the bytes read from ``stream``."""
    root_fd = os.open(destination, _DIR_FLAGS)
    writer = _Writer(root_fd, len(os.fsencode(str(destination))), policy)
    count = 0
    try:
        for member in read_members(stream, policy, cap, cap_hint=cap_hint):
            if member.refused is not None:
                raise _refuse(member, member.refused)
            if member.name.split("/", 1)[0] in reserved:
                top = member.name.split("/", 1)[0]
                raise _refuse(member, f"{top} is written by podium, not sent")
            writer.create(member)
            count += 1
    finally:
        writer.close()
        os.close(root_fd)
    return count


def extract_fresh(
    open_stream: Callable[[], BinaryIO], destination: Path, policy: ArchivePolicy, **options: object
) -> int:
    """:func:`extract` into the new folder ``destination``, which is removed again when anything fails."""
    destination.mkdir(mode=0o755)
    try:
        return extract(open_stream(), destination, policy, **options)  # type: ignore[arg-type]
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise

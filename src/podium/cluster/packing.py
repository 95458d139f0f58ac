"""A folder packed as a tar on disk, walked here through directory descriptors, following no link.

:func:`pack` streams the tar to a file (never into memory). Directories, regular files and symbolic
links (kept as links; their targets are never read) go in. What cannot travel faithfully or
safely is *withheld* and named with its reason (:attr:`Packed.withheld`): a hard link (its
content may be a host file's), a sparse file (a ``truncate -s 1T`` would be a terabyte of tar),
a FIFO, socket or device, a name the unpacking side refuses (:func:`name_problem`: beyond
:data:`NAME_MAX_BYTES`, :data:`REL_PATH_MAX_BYTES` or :data:`MAX_DEPTH`, or with a control
character), more than ``max_members`` entries, and any file that would take the regular
files past ``max_bytes`` in apparent bytes (a run's ``--disk``). Unpacking is
:mod:`podium.cluster.tarball`'s, through :mod:`podium.untrusted`'s one archive reader.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
import sys
import tarfile
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from podium.errors import HarnessError, quote
from podium.untrusted.archive import RUN_FOLDER
from podium.untrusted.archive import name_problem as _policy_problem

__all__ = [
    "CHUNK_BYTES",
    "MAX_DEPTH",
    "MAX_MEMBERS",
    "NAME_MAX_BYTES",
    "REL_PATH_MAX_BYTES",
    "Packed",
    "file_chunks",
    "name_problem",
    "pack",
    "tar_bound",
]

CHUNK_BYTES = 16 << 20  # what one transfer step carries (a Ray object), and all a reader holds at once
NAME_MAX_BYTES = RUN_FOLDER.max_part  # one name (NAME_MAX of ext4, XFS, btrfs, tmpfs)
REL_PATH_MAX_BYTES = RUN_FOLDER.max_path  # a name inside the folder: PATH_MAX (4096) less room for where it lies
MAX_DEPTH = RUN_FOLDER.max_depth  # folders inside folders
MAX_MEMBERS = RUN_FOLDER.max_members  # entries in one tar
SPARSE_SLACK_BYTES = 1 << 20  # apparent bytes beyond the allocated ones before a file counts as sparse
TAR_OVERHEAD_PER_MEMBER = 10 << 10  # header, PAX header (a long name and link target) and padding, at most
WITHHELD_SHOWN = 100  # withheld entries named one by one; the rest are counted

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FS_ENCODING = sys.getfilesystemencoding()


@dataclass
class Packed:
    """A tar written by :func:`pack`: where it is, what it holds and what it left out, with why."""

    path: Path
    size: int = 0  # bytes of the tar
    sha256: str = ""
    members: int = 0
    file_bytes: int = 0  # apparent bytes of its regular files
    withheld: list[str] = field(default_factory=list)  # "NAME: why", the first WITHHELD_SHOWN
    withheld_count: int = 0

    def withheld_summary(self) -> list[str]:
        """The withheld entries as a record keeps them: named, then counted."""
        more = self.withheld_count - len(self.withheld)
        return self.withheld + ([f"... and {more} more withheld"] if more > 0 else [])


def tar_bound(file_bytes: int, members: int) -> int:
    """The largest tar that ``members`` entries holding ``file_bytes`` of regular files can make."""
    return file_bytes + (members + 2) * TAR_OVERHEAD_PER_MEMBER


def name_problem(parts: tuple[str, ...]) -> str | None:
    """Why a name inside a folder cannot travel (the unpacking side's rules for a run folder), or None."""
    return _policy_problem("/".join(parts), RUN_FOLDER)


def _shown(parts: tuple[str, ...] | str) -> str:
    text = parts if isinstance(parts, str) else "/".join(parts)
    return quote(text, 200)


# -- packing ----------------------------------------------------------------------------------------------


class _HashingWriter(io.RawIOBase):
    """The tar's file, with the sha256 and size of what was written."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd, self.size, self.digest = fd, 0, hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += os.write(self.fd, view[written:])
        self.digest.update(view)
        self.size += len(view)
        return len(view)

    def tell(self) -> int:
        return self.size


class _Exactly(io.RawIOBase):
    """``size`` bytes of an open file: what it holds, cut at ``size``, or padded with zeros if it shrank."""

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self.fd, self.left = fd, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self.left)
        if want <= 0:
            return 0
        got = os.readv(self.fd, [view[:want]]) if self.fd >= 0 else 0
        if got == 0:  # shorter than when it was measured: zeros keep the tar whole
            self.fd = -1
            view[:want] = bytes(want)
            got = want
        self.left -= got
        return got


class _Packer:
    def __init__(
        self,
        tar: tarfile.TarFile,
        packed: Packed,
        skip: Collection[tuple[str, ...]],
        first: Sequence[str],
        hidden: bool,
        max_bytes: int | None,
        max_members: int,
        hostile: bool,
    ) -> None:
        self.tar, self.packed, self.skip, self.first, self.hidden = tar, packed, skip, first, hidden
        self.max_bytes, self.max_members, self.hostile = max_bytes, max_members, hostile

    def withhold(self, parts: tuple[str, ...], why: str) -> None:
        self.packed.withheld_count += 1
        if len(self.packed.withheld) < WITHHELD_SHOWN:
            self.packed.withheld.append(f"{_shown(parts)}: {why}; not sent")

    def folder(self, dir_fd: int, parts: tuple[str, ...]) -> None:
        with os.scandir(dir_fd) as entries:
            names = sorted(entry.name for entry in entries)
        if not parts:  # what matters most goes first, while the cap has room
            names.sort(key=lambda name: name not in self.first)
        for name in names:
            here = (*parts, name)
            if here in self.skip or (not self.hidden and (name.startswith(".") or name == "__pycache__")):
                continue
            problem = name_problem(here)
            if problem is not None:
                self.withhold(here, problem)
                continue
            try:
                info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            self.entry(dir_fd, name, here, info)

    def entry(self, dir_fd: int, name: str, here: tuple[str, ...], info: os.stat_result) -> None:
        mode = info.st_mode
        if self.packed.members >= self.max_members:
            self.withhold(here, f"more than {self.max_members:,} entries")
        elif stat.S_ISDIR(mode):
            self.add(here, tarfile.DIRTYPE, info)
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                try:
                    self.folder(inner, here)
                finally:
                    os.close(inner)
            except OSError as error:
                if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):  # the tar's disk, not the folder
                    raise
                self.withhold(here, f"what the folder holds could not be read ({error.strerror})")
        elif stat.S_ISLNK(mode):
            target = os.readlink(name, dir_fd=dir_fd)
            if len(os.fsencode(target)) >= 4096:
                self.withhold(here, "a symbolic link with a target of 4,096 bytes or more")
            else:
                self.add(here, tarfile.SYMTYPE, info, target=target)
        elif stat.S_ISREG(mode):
            self.regular(dir_fd, name, here, info)
        else:
            kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
            self.withhold(here, f"a {kind}, not a regular file")

    def regular(self, dir_fd: int, name: str, here: tuple[str, ...], info: os.stat_result) -> None:
        problem = self.file_problem(info)
        if problem is not None:
            self.withhold(here, problem)
            return
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        except OSError as error:
            self.withhold(here, f"it could not be opened ({error.strerror})")
            return
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
                self.withhold(here, "it was replaced while it was being sent")
                return
            problem = self.file_problem(opened)
            if problem is not None:
                self.withhold(here, problem)
                return
            self.add(here, tarfile.REGTYPE, opened, content=_Exactly(fd, opened.st_size))
            self.packed.file_bytes += opened.st_size
        finally:
            os.close(fd)

    def file_problem(self, info: os.stat_result) -> str | None:
        if self.hostile and info.st_nlink > 1:
            return f"a hard link ({info.st_nlink} names for one file, which may lie outside the folder)"
        allocated = info.st_blocks * 512
        if self.hostile and info.st_size > allocated + SPARSE_SLACK_BYTES:
            return f"a sparse file ({info.st_size:,} bytes apparent, {allocated:,} allocated)"
        if self.max_bytes is not None and self.packed.file_bytes + info.st_size > self.max_bytes:
            return (
                f"{info.st_size:,} bytes would take the folder's files past their cap of {self.max_bytes:,} "
                "bytes (the run's --disk, counted in apparent bytes)"
            )
        return None

    def add(
        self,
        parts: tuple[str, ...],
        kind: bytes,
        info: os.stat_result,
        target: str = "",
        content: BinaryIO | _Exactly | None = None,
    ) -> None:
        member = tarfile.TarInfo("/".join(parts))
        member.type = kind
        member.mode = stat.S_IMODE(info.st_mode) & 0o755
        member.mtime = max(0, int(info.st_mtime))
        member.linkname = target
        member.size = info.st_size if kind == tarfile.REGTYPE else 0
        self.tar.addfile(member, content)
        self.packed.members += 1


def pack(
    folder: Path,
    out: Path,
    *,
    skip: Collection[Path] = (),
    first: Sequence[str] = (),
    hidden: bool = True,
    max_bytes: int | None = None,
    max_members: int = MAX_MEMBERS,
    hostile: bool = True,
) -> Packed:
    """Write ``folder``'s tree as a tar to the new file ``out``, streamed; what it holds and withheld.

    ``skip`` names folders inside ``folder`` to leave out; ``first``, entries at its top to pack before
    the others (a run's submission, so that the cap never leaves it out); without ``hidden``, hidden
    entries and ``__pycache__`` are left out too. ``max_bytes`` caps the regular files' apparent bytes: a file
    past it is withheld, as is anything that cannot travel (see the module's docstring). A folder
    that is not ``hostile`` (podium's own: prepared data, the user's agent) sends hard links and
    sparse files as the files they read as. A full disk raises :class:`HarnessError` and leaves no ``out``.
    """
    root = folder.resolve()
    skipped = {p.resolve().relative_to(root).parts for p in skip if p.resolve().is_relative_to(root)}
    packed = Packed(out)
    fd = os.open(out, _CREATE_FLAGS, 0o600)
    try:
        writer = _HashingWriter(fd)
        with tarfile.open(
            fileobj=writer, mode="w", format=tarfile.PAX_FORMAT, encoding=_FS_ENCODING, errors="surrogateescape"
        ) as tar:
            top = os.open(root, _DIR_FLAGS)
            try:
                _Packer(tar, packed, skipped, first, hidden, max_bytes, max_members, hostile).folder(top, ())
            finally:
                os.close(top)
    except OSError as error:
        os.close(fd)
        out.unlink(missing_ok=True)
        raise HarnessError(f"{folder} could not be packed into {out}: {error}") from error
    os.close(fd)
    packed.size, packed.sha256 = writer.size, writer.digest.hexdigest()
    return packed


def file_chunks(path: Path, chunk: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of ``path`` in pieces of ``chunk`` bytes (the last one shorter)."""
    with open(path, "rb") as handle:
        while piece := handle.read(chunk):
            yield piece

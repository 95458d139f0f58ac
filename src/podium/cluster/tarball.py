"""A folder as a tar on disk and back, with every member checked here rather than by :mod:`tarfile`.

**Packing** (:func:`pack`) walks the folder itself, through directory descriptors, following no
link, and streams the tar to a file (never into memory). Directories, regular files and symbolic
links (kept as links; their targets are never read) go in. What cannot travel faithfully or
safely is *withheld* and named with its reason (:attr:`Packed.withheld`): a hard link (its
content may be a host file's), a sparse file (a ``truncate -s 1T`` would be a terabyte of tar),
a FIFO, socket or device, a name or depth beyond :data:`NAME_MAX_BYTES`, :data:`REL_PATH_MAX_BYTES`
or :data:`MAX_DEPTH`, more than ``max_members`` entries, and any file that would take the regular
files past ``max_bytes`` in apparent bytes (a run's ``--disk``).

**Unpacking** (:func:`unpack`) trusts neither the tar nor :mod:`tarfile`'s extraction filters,
whose 2025 link-escape fixes depend on the interpreter's patch level (3.11.13, 3.12.11): tarfile
only parses headers, and this module checks each member and creates it itself, relative to its
folder's descriptor, with ``O_NOFOLLOW`` at every component and ``O_EXCL`` for every new name. A
member must have a relative name without ``..`` whose parts and whole stay within the limits
above, and be a directory, a regular file (not sparse) or a symbolic link; a hard link, a device,
a FIFO or anything else is refused. A link is created as a link and never resolved: a member below
it, or one whose folder was not made by an earlier member, is refused. Apparent bytes and members
are capped. The first refusal stops the unpack with the member's name and the reason;
:func:`unpack_fresh` then removes the folder it was unpacking into, so nothing half-written stays.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import shutil
import stat
import sys
import tarfile
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from podium.errors import HarnessError, quote

__all__ = [
    "CHUNK_BYTES",
    "MAX_DEPTH",
    "MAX_MEMBERS",
    "NAME_MAX_BYTES",
    "REL_PATH_MAX_BYTES",
    "ChunkStream",
    "Packed",
    "UnpackRefused",
    "file_chunks",
    "pack",
    "tar_bound",
    "unpack",
    "unpack_fresh",
]

CHUNK_BYTES = 16 << 20  # what one transfer step carries (a Ray object), and all a reader holds at once
NAME_MAX_BYTES = 255  # one name (NAME_MAX of ext4, XFS, btrfs, tmpfs)
REL_PATH_MAX_BYTES = 3072  # a name inside the folder: PATH_MAX (4096) less room for where the folder lies
MAX_DEPTH = 128  # folders inside folders
MAX_MEMBERS = 1_000_000  # entries in one tar
SPARSE_SLACK_BYTES = 1 << 20  # apparent bytes beyond the allocated ones before a file counts as sparse
MAX_HEADER_BYTES = 64 << 10  # one long-name or PAX header (podium's longest: a name and a link target, 7 KiB)
TAR_OVERHEAD_PER_MEMBER = 10 << 10  # header, PAX header (a long name and link target) and padding, at most
WITHHELD_SHOWN = 100  # withheld entries named one by one; the rest are counted

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_FS_ENCODING = sys.getfilesystemencoding()


class UnpackRefused(HarnessError):
    """A tar that :func:`unpack` refused: a member's name, type, size or place, or the stream itself."""


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
    """Why a name inside a folder cannot travel (its parts and whole against the limits), or None."""
    if len(parts) > MAX_DEPTH:
        return f"more than {MAX_DEPTH} folders deep"
    sizes = [len(os.fsencode(part)) for part in parts]
    if max(sizes) > NAME_MAX_BYTES:
        return f"a name of {max(sizes)} bytes (at most {NAME_MAX_BYTES})"
    if sum(sizes) + len(sizes) - 1 > REL_PATH_MAX_BYTES:
        return f"a path of more than {REL_PATH_MAX_BYTES} bytes"
    return None


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


# -- unpacking --------------------------------------------------------------------------------------------


class ChunkStream(io.RawIOBase):
    """The pieces ``chunks`` gives, read as one stream that must be exactly ``size`` bytes with ``sha256``.

    A piece that would run past ``size`` is refused when it arrives; :meth:`finish` reads what is
    left (at most ``size`` in all) and refuses a stream that is short or whose digest differs.
    """

    def __init__(self, chunks: Iterator[bytes], size: int, sha256: str) -> None:
        super().__init__()
        self.chunks, self.size, self.sha256 = chunks, size, sha256
        self.seen, self.digest = 0, hashlib.sha256()
        self.buffer, self.offset = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while self.offset >= len(self.buffer):
            piece = next(self.chunks, None)
            if piece is None:
                return 0
            if not isinstance(piece, bytes) or self.seen + len(piece) > self.size:
                raise UnpackRefused(f"the tar runs past the {self.size:,} bytes announced for it")
            self.seen += len(piece)
            self.digest.update(piece)
            self.buffer, self.offset = piece, 0
        count = min(len(view), len(self.buffer) - self.offset)
        view[:count] = self.buffer[self.offset : self.offset + count]
        self.offset += count
        return count

    def finish(self) -> None:
        """Read to the end and check the size and the digest."""
        while self.read(CHUNK_BYTES):
            pass
        if self.seen != self.size:
            raise UnpackRefused(f"the tar ended after {self.seen:,} of the {self.size:,} bytes announced for it")
        if self.digest.hexdigest() != self.sha256:
            raise UnpackRefused("the tar's sha256 differs from the one announced for it")


def _mode(member: tarfile.TarInfo, owner_bits: int) -> int:
    return (member.mode & 0o755) | owner_bits


def _member_name(member: tarfile.TarInfo) -> tuple[str, ...]:
    """The member's name as parts inside the folder, or :class:`UnpackRefused` naming why not."""
    name = member.name
    if "\0" in name:
        raise UnpackRefused(f"member {_shown(name)}: a NUL byte in its name")
    if name.startswith("/"):
        raise UnpackRefused(f"member {_shown(name)}: an absolute name")
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if not parts:
        raise UnpackRefused(f"member {_shown(name)}: an empty name")
    if ".." in parts:
        raise UnpackRefused(f"member {_shown(name)}: '..' in its name")
    problem = name_problem(parts)
    if problem is not None:
        raise UnpackRefused(f"member {_shown(name)}: {problem}")
    return parts


def _kind(member: tarfile.TarInfo) -> str:
    """``dir``, ``file`` or ``link``; :class:`UnpackRefused` for any other member."""
    if member.type == tarfile.DIRTYPE:
        return "dir"
    if member.type in (tarfile.REGTYPE, tarfile.AREGTYPE) and not member.sparse:
        return "file"
    if member.type == tarfile.SYMTYPE:
        target = member.linkname
        if not target or "\0" in target or len(os.fsencode(target)) >= 4096:
            raise UnpackRefused(f"member {_shown(member.name)}: a symbolic link with an empty or too long target")
        return "link"
    what = {
        tarfile.LNKTYPE: f"a hard link to {_shown(member.linkname)}",
        tarfile.CHRTYPE: "a character device",
        tarfile.BLKTYPE: "a block device",
        tarfile.FIFOTYPE: "a FIFO",
        tarfile.CONTTYPE: "a contiguous file",
    }.get(member.type, "a sparse file" if member.sparse else f"a member of type {member.type!r}")
    raise UnpackRefused(f"member {_shown(member.name)}: {what}; only folders, files and symbolic links are kept")


class _BoundedInfo(tarfile.TarInfo):
    """Headers as :mod:`tarfile` parses them, but no long-name or PAX header beyond MAX_HEADER_BYTES (tarfile reads
    one whole into memory) and no sparse member of any format (tarfile reads their maps, unbounded)."""

    def _proc_member(self, tar: tarfile.TarFile) -> Any:
        headers = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE)
        if self.type in (*headers, tarfile.SOLARIS_XHDTYPE) and self.size > MAX_HEADER_BYTES:
            raise UnpackRefused(f"a header of {self.size:,} bytes (at most {MAX_HEADER_BYTES:,})")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise UnpackRefused(f"member {_shown(self.name)}: a sparse file")
        return super()._proc_member(tar)  # type: ignore[misc]

    def _proc_gnusparse_00(self, *args: Any) -> None:
        raise UnpackRefused("a sparse file (GNU sparse 0.0)")

    def _proc_gnusparse_01(self, *args: Any) -> None:
        raise UnpackRefused("a sparse file (GNU sparse 0.1)")

    def _proc_gnusparse_10(self, *args: Any) -> None:
        raise UnpackRefused("a sparse file (GNU sparse 1.0)")


class _Unpacker:
    """Members created below one folder's descriptor, each parent opened component by component without
    following a link."""

    def __init__(self, root_fd: int, root_bytes: int) -> None:
        self.root_fd, self.root_bytes = root_fd, root_bytes
        self.parent: tuple[tuple[str, ...], int] = ((), root_fd)

    def close(self) -> None:
        if self.parent[1] != self.root_fd:
            os.close(self.parent[1])
        self.parent = ((), self.root_fd)

    def parent_fd(self, parts: tuple[str, ...], name: str) -> int:
        if parts == self.parent[0]:
            return self.parent[1]
        self.close()
        fd = os.dup(self.root_fd)
        try:
            for index, part in enumerate(parts):
                try:
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    where = _shown(parts[: index + 1])
                    if error.errno == errno.ENOENT:
                        why = f"its folder {where} was not made by an earlier member"
                    elif error.errno in (errno.ELOOP, errno.ENOTDIR):
                        why = f"it lies below {where}, which is a symbolic link or a file (links are never followed)"
                    else:
                        why = f"its folder {where} cannot be opened ({error.strerror})"
                    raise UnpackRefused(f"member {_shown(name)}: {why}") from None
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        self.parent = (parts, fd)
        return fd

    def create(self, tar: tarfile.TarFile, member: tarfile.TarInfo, parts: tuple[str, ...], kind: str) -> None:
        if self.root_bytes + 1 + len(os.fsencode("/".join(parts))) >= 4096:
            raise UnpackRefused(f"member {_shown(member.name)}: a path of 4,096 bytes or more where it would land")
        parent = self.parent_fd(parts[:-1], member.name)
        name = parts[-1]
        try:
            if kind == "dir":
                os.mkdir(name, _mode(member, 0o700), dir_fd=parent)
            elif kind == "link":
                os.symlink(member.linkname, name, dir_fd=parent)
                with contextlib.suppress(OSError, OverflowError, ValueError):
                    os.utime(name, (member.mtime, member.mtime), dir_fd=parent, follow_symlinks=False)
            else:
                self.file(tar, member, parent, name)
        except FileExistsError:
            raise UnpackRefused(f"member {_shown(member.name)}: a second member of the same name") from None

    def file(self, tar: tarfile.TarFile, member: tarfile.TarInfo, parent: int, name: str) -> None:
        fd = os.open(name, _CREATE_FLAGS, _mode(member, 0o600), dir_fd=parent)
        try:
            source = tar.extractfile(member)
            assert source is not None, "a regular member has content"
            left = member.size
            while left > 0:
                block = source.read(min(left, 1 << 20))
                if not block:
                    raise UnpackRefused(f"member {_shown(member.name)}: the tar ends inside it")
                _write_all(fd, block)
                left -= len(block)
            os.fchmod(fd, _mode(member, 0o600))
            with contextlib.suppress(OSError, OverflowError, ValueError):
                os.utime(fd, (member.mtime, member.mtime))
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def unpack(
    source: BinaryIO | ChunkStream,
    destination: Path,
    *,
    max_bytes: int | None = None,
    max_members: int = MAX_MEMBERS,
    reserved: Collection[str] = (),
) -> int:
    """Unpack the tar read from ``source`` into the existing folder ``destination``; the members made.

    Every member is checked first (see the module's docstring); the first refusal raises
    :class:`UnpackRefused` naming it, and what was made before it stays for the caller to remove
    (:func:`unpack_fresh`). ``reserved`` names that no member may take at the top (files the
    caller writes there itself). ``max_bytes`` caps the regular files' apparent bytes.
    """
    root_fd = os.open(destination, _DIR_FLAGS)
    unpacker = _Unpacker(root_fd, len(os.fsencode(str(destination))))
    members = file_bytes = 0
    try:
        with tarfile.open(
            fileobj=source, mode="r|", encoding=_FS_ENCODING, errors="surrogateescape", tarinfo=_BoundedInfo
        ) as tar:
            while (member := tar.next()) is not None:
                tar.members.clear()  # type: ignore[attr-defined]  # headers seen are not kept: a million cost nothing
                parts = _member_name(member)
                kind = _kind(member)
                members += 1
                if members > max_members:
                    raise UnpackRefused(f"member {_shown(member.name)}: more than {max_members:,} members")
                if parts[0] in reserved:
                    raise UnpackRefused(f"member {_shown(member.name)}: {parts[0]} is written by podium, not sent")
                if kind == "file":
                    file_bytes += member.size
                    if max_bytes is not None and file_bytes > max_bytes:
                        raise UnpackRefused(
                            f"member {_shown(member.name)}: the files pass their cap of {max_bytes:,} bytes"
                        )
                unpacker.create(tar, member, parts, kind)
    except tarfile.TarError as error:
        raise UnpackRefused(f"the tar cannot be read: {error}") from None
    except OSError as error:
        raise HarnessError(f"a tar could not be unpacked into {destination}: {error}") from error
    finally:
        unpacker.close()
        os.close(root_fd)
    if isinstance(source, ChunkStream):
        source.finish()
    return members


def unpack_fresh(open_source: Callable[[], BinaryIO | ChunkStream], destination: Path, **caps: Any) -> int:
    """:func:`unpack` into the new folder ``destination``, which is removed again when the unpack fails."""
    destination.mkdir(mode=0o755)  # readable as a folder the sandbox mounts (an agent's, public data)
    try:
        return unpack(open_source(), destination, **caps)
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise

"""The files of an MLE-bench data dir as ``podium prepare --from-mlebench`` takes them (see
:mod:`podium.data.mlebench`): every folder opened without following a link, every entry scanned and refused
unless a regular file, each file taken into staging as a reflink, a hard link or a streamed copy (checked to
be the file scanned), progress lines on stderr, what an earlier take left removed, and the staging lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from podium.errors import PodiumError
from podium.untrusted import printable

_SIDES = ("public", "private")
_FICLONE = 0x40049409  # ioctl(dest, FICLONE, source): a reflink on btrfs, XFS, bcachefs, ...
_PROGRESS_EVERY = 2.0  # seconds between progress lines
_COPY_CHUNK = 1 << 20
_NAME_LIMIT = 120  # characters of a hostile name quoted in a message
_DEPTH_LIMIT = 64  # folders under public/ or private/ (the deepest prepared dataset has a handful)


class _Refused(PodiumError):
    """The source holds something that is not taken (a link, a device, a file changed while read)."""


@dataclass(frozen=True)
class _Entry:
    """A regular file of the source, as scanned: its path under ``prepared/`` and its identity."""

    path: str
    size: int
    device: int
    inode: int
    mtime_ns: int
    mode: int


def _shown(text: str) -> str:
    """A name from the source, safe to print (:func:`podium.untrusted.printable`), long names cut."""
    return printable(text, _NAME_LIMIT)


def _open_dir(name: str, dir_fd: int | None) -> int:
    """A folder opened without following a link (``ELOOP``/``ENOTDIR`` for a link or a file)."""
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)


def _scan(dir_fd: int, prefix: str, out: list[_Entry]) -> None:
    """Every regular file under the open folder ``dir_fd`` (named ``prefix``), refusing anything else."""
    if prefix.count("/") > _DEPTH_LIMIT:
        raise _Refused(f"{_shown(prefix)} is nested more than {_DEPTH_LIMIT} folders deep; not a prepared dataset")
    with os.scandir(dir_fd) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            path = f"{prefix}/{entry.name}"
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                child = _open_dir(entry.name, dir_fd)
                try:
                    _scan(child, path, out)
                finally:
                    os.close(child)
            elif stat.S_ISREG(info.st_mode):
                out.append(_Entry(path, info.st_size, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_mode))
            else:
                kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file or folder"
                raise _Refused(f"{_shown(path)} is {kind}; links and special files are not followed or taken")


def _source(root: Path, competition_id: str) -> tuple[int, str | None]:
    """The open ``ROOT/ID/prepared`` folder (ROOT as given; no link followed below it), or -1 and why it is
    missing."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name, where in ((competition_id, competition_id), ("prepared", f"{competition_id}/prepared")):
            try:
                inner = _open_dir(name, fd)
            except FileNotFoundError:
                os.close(fd)
                return -1, f"no {where}/ in {root}"
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _Refused(f"{where} is a link or a file, not a folder; links are not followed") from None
                raise
            os.close(fd)
            fd = inner
        return fd, None
    except BaseException:
        os.close(fd)
        raise


class _Progress:
    """Lines on stderr at most every few seconds: files and bytes done of the total."""

    def __init__(self, say: Callable[[str], None], what: str, files: int, size: int) -> None:
        self.say, self.what, self.files, self.size = say, what, files, size
        self.done_files = self.done_bytes = 0
        self.last = time.monotonic()

    def __call__(self, size: int) -> None:
        self.done_files += 1
        self.done_bytes += size
        now = time.monotonic()
        if now - self.last >= _PROGRESS_EVERY:
            self.last = now
            self.say(
                f"  {self.what}: {self.done_files:,} of {self.files:,} files, "
                f"{_size(self.done_bytes)} of {_size(self.size)}"
            )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000:
            return f"{value:.3g} {unit}"
        value /= 1000
    return f"{value:.3g} TB"


def _same_as_taken(entry: _Entry, name: str, dst_fd: int) -> bool:
    """Whether the staging folder already holds this file (an interrupted take): the same inode, or a copy
    of the same size and modification time."""
    try:
        info = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    if (info.st_dev, info.st_ino) == (entry.device, entry.inode):
        return True
    return info.st_nlink == 1 and info.st_size == entry.size and info.st_mtime_ns == entry.mtime_ns


def _opened(entry: _Entry, name: str, src_fd: int) -> int:
    """The source file opened read-only, checked to be the regular file scanned (not swapped for a link)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=src_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Refused(f"{_shown(entry.path)} became a symbolic link while it was taken; not followed") from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (entry.device, entry.inode):
        os.close(fd)
        raise _Refused(f"{_shown(entry.path)} changed while it was taken; run again")
    return fd


def _reflink(source: int, name: str, dst_fd: int) -> bool:
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644, dir_fd=dst_fd)
    try:
        fcntl.ioctl(target, _FICLONE, source)
        return True
    except OSError:
        os.unlink(name, dir_fd=dst_fd)
        return False
    finally:
        os.close(target)


def _hardlink(entry: _Entry, name: str, src_fd: int, dst_fd: int) -> bool:
    if entry.mode & 0o444 != 0o444:  # a link keeps the source's mode, which a link cannot change: copy
        return False
    try:
        os.link(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    except OSError:
        return False
    info = os.stat(name, dir_fd=dst_fd, follow_symlinks=False)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (entry.device, entry.inode):
        os.unlink(name, dir_fd=dst_fd)  # swapped between the scan and the link: not what was checked
        raise _Refused(f"{_shown(entry.path)} changed while it was taken; run again")
    return True


def _copy(entry: _Entry, source: int, name: str, dst_fd: int) -> None:
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644, dir_fd=dst_fd)
    written = 0
    try:
        while block := os.read(source, _COPY_CHUNK):
            os.write(target, block)
            written += len(block)
            if written > entry.size:
                break
        os.utime(target, ns=(entry.mtime_ns, entry.mtime_ns))  # so that a resumed take knows the copy
    finally:
        os.close(target)
    if written != entry.size:
        os.unlink(name, dir_fd=dst_fd)
        raise _Refused(f"{_shown(entry.path)} changed size while it was copied; run again")


def _take_file(entry: _Entry, src_fd: int, dst_fd: int) -> str:
    """One file into the staging folder: ``reflink``, ``hard link`` or ``copy`` (what was done)."""
    name = entry.path.rsplit("/", 1)[-1]
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dst_fd)  # a partial file of an interrupted take
    source = _opened(entry, name, src_fd)
    try:
        if _reflink(source, name, dst_fd):
            return "reflink"
        if _hardlink(entry, name, src_fd, dst_fd):
            return "hard link"
        _copy(entry, source, name, dst_fd)
        return "copy"
    finally:
        os.close(source)


def _folders(root_fd: int, path: str, *, create: bool) -> int:
    """The folder ``path`` (``public/a/b``) under ``root_fd``, opened without following links, created if asked."""
    fd = os.dup(root_fd)
    for part in path.split("/"):
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
        try:
            inner = _open_dir(part, fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def _take_all(entries: list[_Entry], src_fd: int, staging: Path, progress: _Progress) -> dict[str, int]:
    """Every scanned file into ``staging`` (folders made as needed); how many were done each way. Entries come
    folder by folder, so only the current folder of each side is open."""
    how: dict[str, int] = {}
    staging_fd = _open_dir(str(staging), None)
    parent, source_dir, target_dir = "", -1, -1
    try:
        for entry in entries:
            folder, name = entry.path.rsplit("/", 1)
            if folder != parent:
                for fd in (source_dir, target_dir):
                    if fd >= 0:
                        os.close(fd)
                source_dir = target_dir = -1
                source_dir = _folders(src_fd, folder, create=False)
                target_dir = _folders(staging_fd, folder, create=True)
                parent = folder
            taken = _same_as_taken(entry, name, target_dir)
            done = "already taken" if taken else _take_file(entry, source_dir, target_dir)
            how[done] = how.get(done, 0) + 1
            progress(entry.size)
    finally:
        for fd in (source_dir, target_dir, staging_fd):
            if fd >= 0:
                os.close(fd)
    return how


def _stale(staging: Path, wanted: set[str]) -> None:
    """Remove what an earlier take left in staging that the source no longer holds (links not followed)."""
    folders = {path.rsplit("/", i)[0] for path in wanted for i in range(1, path.count("/") + 1)}
    for side in _SIDES:
        top = staging / side
        if top.is_symlink() or not top.is_dir():
            continue
        for folder, names, files in os.walk(top, topdown=False):
            for name in [*files, *names]:
                path = Path(folder) / name
                relative = path.relative_to(staging).as_posix()
                if path.is_symlink() or (not path.is_dir() and relative not in wanted):
                    path.unlink()
                elif path.is_dir() and relative not in folders:
                    shutil.rmtree(path)


class _locked:
    """An exclusive lock on the staging folder: one take of a competition at a time."""

    def __init__(self, folder: Path, competition_id: str) -> None:
        self.folder, self.competition_id = folder, competition_id
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = _open_dir(str(self.folder), None)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise _Refused(f"another podium prepare is taking {self.competition_id} now") from None

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

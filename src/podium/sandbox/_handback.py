"""What leaves a sandbox: plain files, folders and symbolic links, owned by the harness's user.

An agent may leave anything in its writable folders: a setuid or setgid executable (which, owned by
root on the host, would make any host user who runs it root), device nodes, FIFOs that block a
reader, sockets, files with file capabilities, folders it made unreadable. :func:`hand_over` makes a
tree safe to keep, in place: every folder, regular file and symbolic link is given to one owner,
the setuid, setgid and sticky bits and the ``security.capability`` attribute are dropped, and every
other kind of file is removed. Every sandbox (``local`` included) calls it on the writable folders
when a run ends, after every process of the run is gone; the docker and bwrap sandboxes also call
it to hand the folders to the agent's id before a run starts.

:func:`copy_tree` copies a tree the same way (for the per-run filesystem of :mod:`podium.sandbox._disk`):
holes stay holes and hard links stay links, so the copy holds no more data than the source's
filesystem did, and it stops at a byte budget whatever the source says.

Both walk the tree through directory file descriptors without following a symbolic link and hold a
constant number of descriptors whatever its depth.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

_SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def harness_ids() -> tuple[int, int]:
    return os.getuid(), os.getgid()


def _names(fd: int) -> list[str]:
    try:
        return sorted(os.listdir(fd), reverse=True)  # popped from the end: ascending order
    except OSError:
        return []


def _walk(
    top_fd: int,
    enter: Callable[[int, str, os.stat_result], bool],
    entry: Callable[[int, str, os.stat_result], None],
    leave: Callable[[int], None],
) -> None:
    """Depth first below ``top_fd``: ``enter(parent_fd, name, st)`` for a folder (descend if it says so),
    ``entry(dir_fd, name, st)`` for anything else, ``leave(dir_fd)`` after a folder's entries (the top's too).

    One descriptor at a time: a folder is opened from its parent by name, the parent is reached again
    through ``..`` (nothing may rename folders meanwhile: the run's processes are gone).
    """
    fd = os.dup(top_fd)
    stack = [_names(fd)]
    try:
        while stack:
            if not stack[-1]:
                stack.pop()
                leave(fd)
                if stack:
                    parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = parent
                continue
            name = stack[-1].pop()
            try:
                info = os.lstat(name, dir_fd=fd)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode):
                entry(fd, name, info)
                continue
            if not enter(fd, name, info):
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue
            os.close(fd)
            fd = child
            stack.append(_names(fd))
    finally:
        os.close(fd)


def _settle(dir_fd: int, name: str, info: os.stat_result, uid: int, gid: int, mode: int) -> None:
    """Give the folder or regular file ``name`` to uid:gid with ``mode``, if it is still the inode ``info`` describes."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino, stat.S_IFMT(now.st_mode)) != (info.st_dev, info.st_ino, stat.S_IFMT(info.st_mode)):
            return
        path = f"/proc/self/fd/{fd}"  # the inode itself, never what a name leads to
        if (now.st_uid, now.st_gid) != (uid, gid):
            os.chown(path, uid, gid)
        if stat.S_IMODE(now.st_mode) != mode:
            os.chmod(path, mode)
        with contextlib.suppress(OSError):
            os.removexattr(path, "security.capability")
    finally:
        os.close(fd)


def hand_over(folder: Path, uid: int, gid: int) -> list[str]:
    """Make the tree at ``folder`` hold only folders, regular files and symlinks owned by uid:gid, with no
    setuid, setgid or sticky bit; anything else is removed. Returns warnings (entries it could not fix)."""
    problems: list[str] = []

    def fix(dir_fd: int, name: str, info: os.stat_result) -> None:
        try:
            if stat.S_ISDIR(info.st_mode):
                _settle(dir_fd, name, info, uid, gid, stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS | stat.S_IRWXU)
            elif stat.S_ISREG(info.st_mode):
                _settle(dir_fd, name, info, uid, gid, stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS)
            elif stat.S_ISLNK(info.st_mode):
                os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
            else:  # FIFO, socket, device node
                os.unlink(name, dir_fd=dir_fd)
        except OSError as error:
            problems.append(f"{name!r}: {error.strerror}")

    def enter(dir_fd: int, name: str, info: os.stat_result) -> bool:
        fix(dir_fd, name, info)
        return True

    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return []
    parent = os.open(folder.parent, _DIR_FLAGS)
    try:
        fix(parent, folder.name, info)
        if stat.S_ISDIR(info.st_mode):
            top = os.open(folder.name, _DIR_FLAGS, dir_fd=parent)
            try:
                _walk(top, enter, fix, lambda fd: None)
            finally:
                os.close(top)
    finally:
        os.close(parent)
    if problems:
        return [f"{_entries(len(problems))} in {folder} could not be handed over, e.g. {'; '.join(problems[:3])}"]
    return []


def _entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def copy_tree(source: Path, destination: Path, uid: int, gid: int, budget_bytes: int | None = None) -> list[str]:
    """Copy the contents of the folder ``source`` into the existing folder ``destination``, owned by uid:gid.

    Folders, regular files (holes kept) and symlinks are copied with their mode minus the setuid,
    setgid and sticky bits and their times; hard links within the tree stay hard links; anything
    else is left out. Past ``budget_bytes`` of file data nothing more is copied. Returns warnings.
    """
    skipped: list[str] = []
    copied = 0
    top_src = os.open(source, _DIR_FLAGS)
    top_dst = os.open(destination, _DIR_FLAGS)
    dst = os.dup(top_dst)
    path: list[str] = []  # where dst is, relative to the destination
    modes: list[os.stat_result] = []
    linked: dict[tuple[int, int], str] = {}

    def enter(src_fd: int, name: str, info: os.stat_result) -> bool:
        nonlocal dst
        try:
            os.mkdir(name, 0o700, dir_fd=dst)
            child = os.open(name, _DIR_FLAGS, dir_fd=dst)
        except OSError as error:
            skipped.append(f"{name!r}: {error.strerror}")
            return False
        os.close(dst)
        dst = child
        path.append(name)
        modes.append(info)
        return True

    def leave(src_fd: int) -> None:
        nonlocal dst
        if not modes:  # the top: the destination keeps its own mode and owner
            return
        info = modes.pop()
        with contextlib.suppress(OSError):
            os.chown(dst, uid, gid)
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.chmod(dst, stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS | stat.S_IRWXU)
        parent = os.open("..", _DIR_FLAGS, dir_fd=dst)
        os.close(dst)
        dst = parent
        path.pop()

    def entry(src_fd: int, name: str, info: os.stat_result) -> None:
        nonlocal copied
        try:
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst)
                os.chown(name, uid, gid, dir_fd=dst, follow_symlinks=False)
                os.utime(name, ns=(info.st_atime_ns, info.st_mtime_ns), dir_fd=dst, follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if info.st_nlink > 1 and key in linked:
                    os.link(linked[key], name, src_dir_fd=top_dst, dst_dir_fd=dst, follow_symlinks=False)
                    return
                copied += _copy_file(
                    src_fd, dst, name, info, uid, gid, None if budget_bytes is None else budget_bytes - copied
                )
                if info.st_nlink > 1:
                    linked[key] = "/".join([*path, name])
            else:
                skipped.append(f"{name!r}: not a regular file, folder or symlink")
        except OSError as error:
            skipped.append(f"{name!r}: {error.strerror}")

    try:
        _walk(top_src, enter, entry, leave)
    finally:
        for fd in (top_src, top_dst, dst):
            os.close(fd)
    if skipped:
        return [f"{_entries(len(skipped))} left out of the copy of {source}, e.g. {'; '.join(skipped[:3])}"]
    return []


def _copy_file(
    src_dir: int, dst_dir: int, name: str, info: os.stat_result, uid: int, gid: int, budget: int | None
) -> int:
    """Copy one regular file's data extents (holes stay holes); returns the bytes of data copied."""
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    try:
        if not stat.S_ISREG(os.fstat(src).st_mode):
            raise OSError(errno.EINVAL, "changed into something else than a regular file")
        dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dst_dir)
        try:
            copied = 0
            for start, end in _extents(src, info.st_size):
                if budget is not None and copied + (end - start) > budget:
                    raise OSError(errno.EFBIG, "more data than the run's filesystem held; the rest was not copied")
                offset = start
                while offset < end:
                    data = os.pread(src, min(_CHUNK, end - offset), offset)
                    if not data:
                        break
                    offset += os.pwrite(dst, data, offset)
                copied += offset - start
            os.ftruncate(dst, info.st_size)
            os.fchown(dst, uid, gid)
            os.fchmod(dst, stat.S_IMODE(info.st_mode) & ~_SPECIAL_BITS)
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
            return copied
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The (start, end) ranges of a file that hold data, through SEEK_DATA/SEEK_HOLE."""
    extents, offset = [], 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno == errno.ENXIO:  # only a hole is left
                break
            if error.errno == errno.EINVAL:  # no SEEK_DATA here: all of it
                return [(offset, size)]
            raise
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if end <= start:
            break
        extents.append((start, end))
        offset = end
    return extents


def empty_folder(folder: Path) -> None:
    """Remove what ``folder`` holds (never following a link out of it), keeping the folder."""
    top = os.open(folder, _DIR_FLAGS)
    try:
        _remove_below(top)
    finally:
        os.close(top)


def _remove_below(top: int) -> None:
    def leave(fd: int) -> None:
        for name in _names(fd):  # only empty folders are left here
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)

    def entry(fd: int, name: str, info: os.stat_result) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=fd)

    _walk(top, lambda fd, name, info: True, entry, leave)

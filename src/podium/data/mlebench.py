"""`podium prepare --from-mlebench DIR`: take the data MLE-bench already prepared instead of downloading it again.

MLE-bench prepares each competition into ``DIR/<competition-id>/prepared/public/`` and ``.../private/``
(``mlebench/registry.py``: ``public_dir`` and ``private_dir`` under its data dir, by default
``~/.cache/mle-bench/data``); its splits are the published ones, which version 1 of every podium
competition reproduces. For each competition this module:

1. finds ``DIR/ID/prepared/{public,private}/``, opening every folder without following a link (a
   symbolic link, a device or a pipe anywhere in the source is refused and named, never followed out);
2. takes every file into a staging folder: a reflink where the filesystem can (a copy-on-write copy that
   shares nothing with the source afterwards), else a hard link (only for a file every user may read,
   since its mode cannot be changed without changing the source), else a streamed copy. The source is
   only read: nothing in it is written, renamed or chmod-ed (a hard link adds to its link count);
3. writes podium's own ``description.md`` in place of MLE-bench's, checks the invariants every prepare
   checks (the answers and the sample submission carry the same ids) and runs the leak scan;
4. compares the checksums with those podium records for the competition's real data (``checksums.json``
   beside its declaration, :func:`podium.data.checksums.reference_checksums`). Data that differs is not
   taken; where podium records none, the data is taken and the outcome says it was not compared;
5. renames the staging folder to ``prepared/`` with ``podium.json`` as a prepare writes it (plus where
   the data came from), so a prepared folder that exists is complete.

A competition already prepared is skipped, and an interrupted take resumes: the staging folder
(``.prepared.tmp-mlebench``) is kept, and a file already taken (the same inode, or a copy of the same
size and time) is not taken again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from podium.competition import Competition
from podium.data.checksums import DESCRIPTION, compare, digest_tree, reference_checksums, without_description
from podium.data.leaks import scan_for_leaks
from podium.errors import PodiumError
from podium.paths import MARKER, CompetitionPaths

__all__ = ["DEFAULT_MLEBENCH_DIR", "Taken", "competitions_in", "take_from_mlebench", "take_many"]

#: Where MLE-bench keeps its data unless told otherwise (appdirs' user cache dir on Linux).
DEFAULT_MLEBENCH_DIR = Path("~/.cache/mle-bench/data")
_SIDES = ("public", "private")
_FICLONE = 0x40049409  # ioctl(dest, FICLONE, source): a reflink on btrfs, XFS, bcachefs, ...
_STAGING_TAG = "mlebench"
_PROGRESS_EVERY = 2.0  # seconds between progress lines
_COPY_CHUNK = 1 << 20
_NAME_LIMIT = 120  # characters of a hostile name quoted in a message
_DEPTH_LIMIT = 64  # folders under public/ or private/ (the deepest prepared dataset has a handful)
_DESCRIPTION_LIMIT = 1 << 20  # bytes of MLE-bench's description read to compare it with podium's


@dataclass
class Taken:
    """What ``--from-mlebench`` did with one competition."""

    competition_id: str
    status: Literal["taken", "skipped", "differs", "missing", "failed"]
    detail: str
    differed: list[str] = field(default_factory=list)
    fix: str | None = None
    files: int = 0
    bytes: int = 0
    how: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


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
    """A name from the source, safe to print: control characters escaped, long names cut."""
    shown = text if text.isprintable() else ascii(text)[1:-1]
    return shown if len(shown) <= _NAME_LIMIT else shown[: _NAME_LIMIT - 1] + "\u2026"


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


def _their_description(entries: list[_Entry], src_fd: int) -> bytes | None:
    """MLE-bench's ``public/description.md`` (at most 1 MB of it, read without following a link), or None."""
    mine = [e for e in entries if e.path == DESCRIPTION]
    if not mine:
        return None
    public = _open_dir("public", src_fd)
    try:
        fd = _opened(mine[0], "description.md", public)
    finally:
        os.close(public)
    try:
        return os.read(fd, _DESCRIPTION_LIMIT)
    finally:
        os.close(fd)


def _describe(competition: Competition, staging: Path, obfuscated: bool, theirs: bytes | None) -> str:
    """podium's own description in place of MLE-bench's; the words for the outcome."""
    from podium.data.prepare import description_path

    target = staging / DESCRIPTION
    ours = description_path(competition, obfuscated)
    target.unlink(missing_ok=True)
    if ours is None:
        return "no description (podium has none for it)"
    shutil.copyfile(ours, target)
    if theirs is None:
        return "podium's description.md added (MLE-bench's folder had none)"
    same = theirs == ours.read_bytes()
    return "description.md: podium's own" + (" (the same text)" if same else " (MLE-bench's differs)")


def _mismatch(competition: Competition, problems: list[str], started: float) -> Taken:
    fix = f"podium prepare -c {competition.ref} (prepares it from Kaggle's data)"
    detail = f"not taken: {len(problems)} difference(s) from podium's recorded checksums"
    return Taken(competition.id, "differs", detail, problems, fix, seconds=time.monotonic() - started)


def take_from_mlebench(
    competition: Competition,
    source: Path,
    data_dir: Path,
    *,
    force: bool = False,
    obfuscated: bool = False,
    say: Callable[[str], None] | None = None,
) -> Taken:
    """Take one competition's prepared data from the MLE-bench data dir ``source`` (see the module docstring)."""
    from podium.data.prepare import check_invariants

    tell = say or (lambda line: print(line, file=sys.stderr))
    started = time.monotonic()
    fix = f"podium prepare -c {competition.ref}"
    if competition.data_version != 1:
        return Taken(competition.id, "missing", f"MLE-bench holds version 1's data; {competition.ref} needs "
                     f"version {competition.data_version}'s", fix=fix)  # fmt: skip
    paths = CompetitionPaths(data_dir, competition.id)
    record = paths.record()
    if record is not None and not force:
        if competition.shares_data_with(record.get("version")):
            return Taken(competition.id, "skipped", "already prepared (pass --force to take it again)")
        return Taken(competition.id, "failed", f"prepared with the data of version {record.get('version')}",
                     fix=f"{fix} --force")  # fmt: skip
    try:
        src_fd, missing = _source(source, competition.id)
    except _Refused as exc:
        return Taken(competition.id, "failed", f"not taken: {exc}", fix=fix)
    if missing is not None:
        return Taken(competition.id, "missing", missing, fix=fix)
    try:
        entries: list[_Entry] = []
        for side in _SIDES:
            try:
                side_fd = _open_dir(side, src_fd)
            except FileNotFoundError:
                return Taken(competition.id, "missing", f"no {competition.id}/prepared/{side}/ in {source}", fix=fix)
            try:
                _scan(side_fd, side, entries)
            finally:
                os.close(side_fd)
        theirs = _their_description(entries, src_fd)
        entries = [e for e in entries if e.path != DESCRIPTION]
        total = sum(e.size for e in entries)
        tell(f"  {competition.id}: taking {len(entries):,} files ({_size(total)}) from {source / competition.id}")
        paths.root.mkdir(parents=True, exist_ok=True)
        staging = paths.staging(_STAGING_TAG)
        staging.mkdir(exist_ok=True)
        with _locked(staging, competition.id):
            _stale(staging, {e.path for e in entries})
            how = _take_all(entries, src_fd, staging, _Progress(tell, competition.id, len(entries), total))
            for side in _SIDES:
                (staging / side).mkdir(exist_ok=True)
            described = _describe(competition, staging, obfuscated, theirs)
            test_ids = check_invariants(competition, staging)
            leaks = scan_for_leaks(competition, staging / "public", staging / "private", test_ids)
            if leaks:
                shutil.rmtree(staging)
                return Taken(competition.id, "failed", "the leak scan found: " + "; ".join(leaks), fix=fix)
            tell(f"  {competition.id}: checking {_size(total)} against podium's checksums")
            checksums = digest_tree(staging, done=_Progress(tell, f"{competition.id} checked", len(entries), total))
            reference = reference_checksums(competition)
            if reference is not None:
                problems = compare(reference, without_description(checksums))
                if problems:
                    shutil.rmtree(staging)
                    return _mismatch(competition, problems, started)
            checked = "identical to podium's recorded checksums" if reference is not None else (
                "not compared: podium records no checksums of its real data")  # fmt: skip
            marker = {
                "competition_id": competition.id,
                "version": competition.data_version,
                "checksums": checksums,
                "source": {"mlebench": str(source / competition.id / "prepared"), "taken": how},
            }
            (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
            if paths.prepared.exists():
                shutil.rmtree(paths.prepared)
            os.replace(staging, paths.prepared)
    except _Refused as exc:
        shutil.rmtree(paths.staging(_STAGING_TAG), ignore_errors=True)
        return Taken(competition.id, "failed", f"not taken: {exc}", fix=fix)
    finally:
        os.close(src_fd)
    ways = ", ".join(f"{count:,} {way}" for way, count in sorted(how.items()))
    detail = f"{len(entries):,} files ({_size(total)}): {ways}; {checked}; {described}"
    return Taken(competition.id, "taken", detail, files=len(entries), bytes=total, how=how,
                 seconds=time.monotonic() - started)  # fmt: skip


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


def competitions_in(source: Path, known: Iterable[str]) -> Iterator[str]:
    """The competitions of ``known`` that the MLE-bench data dir ``source`` holds a folder of."""
    for cid in known:
        if (source / cid / "prepared").is_dir() and not (source / cid).is_symlink():
            yield cid


def take_many(
    competitions: Iterable[Competition],
    source: Path,
    data_dir: Path,
    *,
    force: bool = False,
    obfuscated: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[Taken]:
    """:func:`take_from_mlebench` for each competition, going on past failures, with a line per competition."""
    tell = say or (lambda line: print(line, file=sys.stderr))
    comps = list(competitions)
    out = []
    for index, comp in enumerate(comps, start=1):
        tell(f"[{index}/{len(comps)}] {comp.ref}")
        fix = f"podium prepare -c {comp.ref}"
        try:
            out.append(take_from_mlebench(comp, source, data_dir, force=force, obfuscated=obfuscated, say=tell))
        except PodiumError as exc:  # the data is not what podium expects (an answers file missing): not taken
            shutil.rmtree(CompetitionPaths(data_dir, comp.id).staging(_STAGING_TAG), ignore_errors=True)
            out.append(Taken(comp.id, "failed", f"not taken: {exc}", fix=fix))
        except OSError as exc:  # a full disk, an unreadable file: what was taken stays staged for the next run
            out.append(Taken(comp.id, "failed", f"{exc.strerror or exc} ({_shown(str(exc.filename or ''))}); "
                             "what was taken is kept, and a rerun resumes", fix=f"rerun, or {fix}"))  # fmt: skip
    return out

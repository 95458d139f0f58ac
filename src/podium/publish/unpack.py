"""A bundle unpacked for ``podium bundle verify``: every member written into a new folder that only this process
writes (every folder made here, every file created new, never through a link), each file's sha256 and size kept,
at most a fixed number of files; and, once verified, that same tree copied out (``--extract``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from podium.errors import UsageError
from podium.publish.bundlefiles import MANIFEST, ROOT
from podium.publish.signing import MAX_SIGNATURE, SIGNATURE
from podium.publish.tarstream import ArchiveError, members
from podium.untrusted import printable

__all__ = ["DEFAULT_MAX_FILES", "MAX_MANIFEST", "empty_target", "extract_tree", "shown"]

#: The largest manifest read: a bundle of tens of thousands of files needs a few MiB.
MAX_MANIFEST = 8 << 20
#: The most files (and folders) a bundle may unpack to unless ``--max-files`` says otherwise.
DEFAULT_MAX_FILES = 20_000


def shown(text: object, most: int = 200) -> str:
    """A value from the bundle as it may be printed: control characters escaped, at most ``most`` characters."""
    value = str(text)
    return printable(value if len(value) <= most else value[:most] + "...")


class _Conflict(Exception):
    """A member whose name another member already holds (a file where a folder is, or the other way round)."""


class _Unpacked:
    """The temporary folder the bundle is unpacked into, and each member's sha256 and size."""

    def __init__(self, root: Path, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.root = root
        self.files: dict[str, tuple[str, int]] = {}
        self.entries = 0
        self.max_files = max_files
        #: The author's signature of the manifest (:mod:`podium.publish.signing`), when the bundle carries one.
        self.signature: bytes | None = None

    def _count(self) -> None:
        self.entries += 1
        if self.entries > self.max_files:
            raise ArchiveError(f"it unpacks to more than {self.max_files} files and folders (--max-files)")

    def _folder(self, parts: Iterable[str]) -> Path:
        folder = self.root
        for part in parts:
            folder = folder / part
            try:
                os.mkdir(folder, 0o700)
                self._count()
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    raise _Conflict("a file of that name is unpacked already") from None
        return folder

    def folder(self, relative: str) -> None:
        self._folder(relative.split("/"))

    def write(self, relative: str, chunks: Iterable[bytes]) -> None:
        parts = relative.split("/")
        path = self._folder(parts[:-1]) / parts[-1]
        self._count()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            raise _Conflict("a folder of that name is unpacked already") from None
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                handle.write(chunk)
        self.files[relative] = (digest.hexdigest(), size)


def _unpack(
    stream: BinaryIO, into: _Unpacked, cap: int, differ: Callable[[str], None], say: Callable[[str], None]
) -> bytes | None:
    """Unpack every member; returns the manifest's bytes (None when there is none). The signature, which the
    manifest cannot list, is kept in ``into.signature``."""
    manifest = None
    prefix = f"{ROOT}/"
    for count, member in enumerate(members(stream, cap), start=1):
        if count % 1000 == 0:
            say(f"unpacked {count} members")
        name = member.name.rstrip("/")
        relative = name.removeprefix(prefix)
        if member.refused is not None:
            differ(f"refused member {shown(member.name)}: {member.refused}")
        elif name == ROOT and member.kind == "folder":
            continue
        elif relative == name:
            differ(f"extra member outside {ROOT}/: {shown(member.name)}")
        elif relative == MANIFEST and manifest is None and member.kind == "file":
            if member.size > MAX_MANIFEST:
                raise ArchiveError(f"its manifest declares {member.size} bytes (at most {MAX_MANIFEST} are read)")
            manifest = b"".join(member.chunks())
        elif relative == SIGNATURE and into.signature is None and member.kind == "file":
            if member.size > MAX_SIGNATURE:
                raise ArchiveError(f"its {SIGNATURE} declares {member.size} bytes (at most {MAX_SIGNATURE} are read)")
            into.signature = b"".join(member.chunks())
        elif relative in into.files or relative in (MANIFEST, SIGNATURE):
            differ(f"duplicate member: {shown(relative)} (the first one is checked)")
        else:
            try:
                if member.kind == "folder":
                    into.folder(relative)
                else:
                    into.write(relative, member.chunks())
            except _Conflict as conflict:
                differ(f"member {shown(relative)} conflicts with another: {conflict}")
    return manifest


def empty_target(target: Path) -> None:
    """Refuse ``--extract DIR`` up front unless DIR is absent or an empty folder."""
    if target.is_symlink() or (target.exists() and (not target.is_dir() or any(target.iterdir()))):
        raise UsageError(
            f"--extract {target}: exists and is not an empty folder; name a new folder (nothing is written there "
            "unless the bundle verifies)"
        )


def extract_tree(
    root: Path, files: Iterable[str], manifest: bytes, target: Path, signature: bytes | None = None
) -> None:
    """Copy exactly ``files`` (each checked, relative to ``root``), the manifest and its signature to ``target``:
    first into a new folder beside it, then renamed into place, so a failure leaves nothing half-written."""
    empty_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial-{uuid.uuid4().hex[:8]}")
    os.mkdir(partial, 0o700)
    try:
        for relative in sorted(files):
            source = root / relative
            place = partial / relative
            place.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, place, follow_symlinks=False)
        (partial / MANIFEST).write_bytes(manifest)
        if signature is not None:
            (partial / SIGNATURE).write_bytes(signature)
        if target.is_dir():
            target.rmdir()  # empty: checked above
        os.rename(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise

"""A folder as a tar on disk and back: packing is :mod:`podium.cluster.packing`'s, unpacking goes through
podium's one reader for hostile archives (:mod:`podium.untrusted.extract`), never through :mod:`tarfile`.

**Unpacking** (:func:`unpack`) trusts neither the tar nor :mod:`tarfile`, whose 2025 link-escape fixes
depend on the interpreter's patch level (3.11.13, 3.12.11): the headers are parsed by
:mod:`podium.untrusted.tarheaders` (pax keys on an allowlist, no GNU long names, sparse or global headers),
each member is checked against :data:`podium.untrusted.archive.RUN_FOLDER` (a relative name without ``..``,
``.``, an empty part or a control character, within the limits on a part, the whole and the depth; a
directory, a regular file or a symbolic link kept as a link and never resolved; a folder made before what it
holds; no name twice; nothing below a link or a file) and created relative to its folder's descriptor with
``O_NOFOLLOW`` at every component and ``O_EXCL`` for every new name. Apparent bytes, members and the bytes
read are capped. The first refusal stops the unpack with the member's name and the reason;
:func:`unpack_fresh` then removes the folder it was unpacking into, so nothing half-written stays.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import shutil
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from podium.cluster.packing import CHUNK_BYTES, MAX_MEMBERS, tar_bound
from podium.errors import HarnessError
from podium.untrusted.archive import RUN_FOLDER
from podium.untrusted.extract import extract
from podium.untrusted.tarheaders import ArchiveRefused

__all__ = ["ChunkStream", "UnpackRefused", "unpack", "unpack_fresh"]


class UnpackRefused(HarnessError):
    """A tar that :func:`unpack` refused: a member's name, type, size or place, or the stream itself."""


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


def _policy(max_bytes: int | None, max_members: int) -> tuple[Any, int | None]:
    policy = dataclasses.replace(RUN_FOLDER, max_bytes=max_bytes, max_members=max_members)
    return policy, None if max_bytes is None else tar_bound(max_bytes, max_members)


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
    caller writes there itself). ``max_bytes`` caps the regular files' apparent bytes (and with them the
    bytes read: :func:`tar_bound`).
    """
    policy, cap = _policy(max_bytes, max_members)
    try:
        count = extract(source, destination, policy, cap=cap, reserved=reserved)  # type: ignore[arg-type]
    except ArchiveRefused as error:
        raise UnpackRefused(str(error)) from None
    except OSError as error:
        raise HarnessError(f"a tar could not be unpacked into {destination}: {error}") from error
    if isinstance(source, ChunkStream):
        source.finish()
    return count


def unpack_fresh(open_source: Callable[[], BinaryIO | ChunkStream], destination: Path, **caps: Any) -> int:
    """:func:`unpack` into the new folder ``destination``, which is removed again when the unpack fails."""
    destination.mkdir(mode=0o755)  # readable as a folder the sandbox mounts (an agent's, public data)
    try:
        return unpack(open_source(), destination, **caps)
    except BaseException:
        shutil.rmtree(destination, ignore_errors=True)
        raise

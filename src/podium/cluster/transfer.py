"""Folders between the driver and the nodes: a competition's public data and the agent out, a run's folder back.

A folder travels as an uncompressed tar written to disk by :func:`podium.cluster.packing.pack` and
moved in chunks of :data:`~podium.cluster.packing.CHUNK_BYTES`, so neither side ever holds a folder
in memory: the driver's data and agent as a :class:`Parcel` of chunks it put in Ray's object store
(it owns them for the whole batch), a run's folder as a file in the node's outbox that the driver
reads back piece by piece (:mod:`podium.cluster.driver`). Every tar is unpacked by
:func:`podium.cluster.tarball.unpack`, which checks each member itself. The public data a node
caches is named by a digest of its recorded checksums and verified against them before any run
reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from podium import owner
from podium.cluster.packing import MAX_MEMBERS, file_chunks, pack
from podium.cluster.tarball import ChunkStream, unpack, unpack_fresh
from podium.data.checksums import compare, digest_tree
from podium.errors import HarnessError
from podium.paths import write_atomic

__all__ = ["Parcel", "cache_public", "check_public", "public_checksums", "public_digest", "unpack_once"]

PART_TIMEOUT_S = 600.0  # the longest one chunk may take to arrive before the transfer counts as lost


@dataclass(frozen=True)
class Parcel:
    """A folder the driver put in Ray's object store as chunks of a tar, for nodes to unpack."""

    chunks: list[Any] = field(repr=False)  # ObjectRefs of the tar's pieces, in order
    size: int = 0
    sha256: str = ""
    members: int = 0
    file_bytes: int = 0
    withheld: tuple[str, ...] = ()  # what could not travel (a FIFO, a name beyond the limits), with why

    @classmethod
    def put(cls, ray: Any, folder: Path, skip: Collection[Path] = (), hidden: bool = True) -> Parcel:
        """``folder`` packed to a temporary file and put in the object store a chunk at a time."""
        scratch = owner.mkdtemp("ship")
        try:
            packed = pack(folder, scratch / "folder.tar", skip=skip, hidden=hidden, hostile=False)
            chunks = [ray.put(piece) for piece in file_chunks(packed.path)]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return cls(
            chunks, packed.size, packed.sha256, packed.members, packed.file_bytes, tuple(packed.withheld_summary())
        )

    def opener(self, ray: Any) -> Callable[[], ChunkStream]:
        """A function that opens the parcel as one stream, fetching each chunk only when it is read."""

        def pieces() -> Any:
            for ref in self.chunks:
                yield ray.get(ref, timeout=PART_TIMEOUT_S)

        return lambda: ChunkStream(pieces(), self.size, self.sha256)

    def caps(self) -> dict[str, Any]:
        """What :func:`unpack` may accept from this parcel: what it said it holds."""
        return {"max_bytes": self.file_bytes, "max_members": self.members}


def public_checksums(checksums: Mapping[str, str]) -> dict[str, str]:
    """The recorded checksums of a prepared competition's public side (``public/NAME`` keys only)."""
    return {key: value for key, value in checksums.items() if key.startswith("public/")}


def public_digest(checksums: Mapping[str, str]) -> str:
    """One name for a public folder's content: the sha256 of its sorted checksum lines."""
    lines = "\n".join(f"{key} {checksums[key]}" for key in sorted(checksums))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_public(prepared: Path, expected: Mapping[str, str], where: str, verified: Path | None = None) -> None:
    """Raise :class:`HarnessError` unless ``prepared/public`` matches the recorded checksums.

    With ``verified`` (a folder of the node's), a successful check is remembered under the checksums'
    digest with the folder's listing (names, sizes, modification times): while the listing is the
    same, the files are not hashed again, so a node reads a large shared folder once, not per run.
    """
    public = prepared / "public"
    if not public.is_dir():
        raise HarnessError(f"{where}: no prepared public folder at {public}")
    marker = (
        verified / f"{public_digest(expected)}-{hashlib.sha256(str(public).encode()).hexdigest()[:16]}"
        if verified
        else None
    )
    listing = _listing(public)
    with contextlib.suppress(OSError):
        if marker is not None and marker.read_text(encoding="utf-8") == listing:
            return
    actual = public_checksums(digest_tree(prepared, sides=("public",)))
    problems = compare(dict(expected), actual)
    if problems:
        raise HarnessError(f"{where}: public data differs from its recorded checksums: {'; '.join(problems[:5])}")
    if marker is not None:
        with contextlib.suppress(OSError):
            marker.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(marker, listing)


def _listing(folder: Path) -> str:
    """A digest of every entry's name, size and modification time under ``folder`` (cheap: no file is read)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(folder)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def cache_public(
    open_tar: Callable[[], BinaryIO | ChunkStream],
    cache: Path,
    competition_id: str,
    digest: str,
    expected: Mapping[str, str],
    max_bytes: int | None = None,
    max_members: int = MAX_MEMBERS,
) -> Path:
    """The node's data dir holding ``competition_id``'s public folder named by ``digest``, unpacked once.

    The tar (``open_tar()``, opened only on a miss) is unpacked beside the folder's final name,
    verified, and renamed into place, so a node that dies half-way leaves no folder a later run would trust.
    """
    root = cache / digest[:32]
    prepared = root / competition_id / "prepared"
    if (prepared / "public").is_dir():
        return root
    staging = root / competition_id / f".prepared.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "public").mkdir(parents=True)
    try:
        unpack(open_tar(), staging / "public", max_bytes=max_bytes, max_members=max_members)
        check_public(staging, expected, competition_id)
        with contextlib.suppress(OSError):  # another worker of this node got there first: theirs is as good
            os.rename(staging, prepared)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root


def unpack_once(
    open_tar: Callable[[], BinaryIO | ChunkStream],
    folder: Path,
    max_bytes: int | None = None,
    max_members: int = MAX_MEMBERS,
) -> Path:
    """``folder``, unpacked from ``open_tar()`` unless it is there already (named by its content's digest)."""
    if folder.is_dir():
        return folder
    staging = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        unpack_fresh(open_tar, staging, max_bytes=max_bytes, max_members=max_members)
        with contextlib.suppress(OSError):  # another worker got there first
            os.rename(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder

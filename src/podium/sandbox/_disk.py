"""The disk cap: how much a run has written into its writable mounts, checked every few seconds."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from podium.sandbox._types import Limits, Mount

CHECK_EVERY_SECONDS = 5.0


def allocated_bytes(paths: Sequence[Path]) -> int:
    """Disk space allocated to the files below ``paths`` (hard links counted once, symlinks not followed)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    todo = [str(p) for p in paths]
    while todo:
        path = todo.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):
            with contextlib.suppress(OSError):
                todo.extend(entry.path for entry in os.scandir(path))
    return total


class DiskWatch:
    """Whether the run's writable mounts hold more than ``cap_bytes``; measured at most every few seconds."""

    def __init__(self, paths: Sequence[Path], cap_bytes: int, every: float = CHECK_EVERY_SECONDS) -> None:
        self.paths = list(paths)
        self.cap_bytes = cap_bytes
        self.every = every
        self.next_check = 0.0
        self.peak_bytes = 0

    def over(self, elapsed: float) -> bool:
        if elapsed < self.next_check:
            return False
        self.next_check = elapsed + self.every
        used = allocated_bytes(self.paths)
        self.peak_bytes = max(self.peak_bytes, used)
        return used > self.cap_bytes


def disk_watch(mounts: Sequence[Mount], limits: Limits) -> DiskWatch | None:
    """The disk watch for a run's writable mounts, or None when the run has no disk cap."""
    if limits.disk_bytes is None:
        return None
    return DiskWatch([m.source for m in mounts if m.writable], limits.disk_bytes)

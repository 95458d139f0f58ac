"""A validation call's body, remembered without keeping it: a digest and a small per-row sketch.

The validation endpoint logs, for every body it checks, its SHA-256, its number of data rows and a
*row sketch*: the data rows (header excluded) fall into :data:`SKETCH_BUCKETS` buckets by the hash
of their first field (the id), and each bucket holds the sum of its rows' hashes. Two bodies that
differ in ``k`` rows differ in at most ``k`` buckets, whatever the rows' order, so the audit
(:mod:`podium.audit`) can tell calls that change a few cells at a time (the validation endpoint
probed as an oracle) from an agent trying new models, with a bounded log line (512 characters).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from typing import Any

__all__ = ["SKETCH_BUCKETS", "body_digest", "sketch_distance"]

#: Buckets of a row sketch (each 8 hex digits in the log).
SKETCH_BUCKETS = 64
_CHUNK = 1 << 20
_MASK = 0xFFFFFFFF


def body_digest(fd: int, size: int) -> dict[str, Any]:
    """``{"sha256", "rows", "row_sketch"}`` of the first ``size`` bytes read from ``fd`` (by offset, so the
    descriptor's position is left alone)."""
    sha = hashlib.sha256()
    buckets = [0] * SKETCH_BUCKETS
    rows = 0
    header = True
    rest = b""
    offset = 0

    def add(line: bytes) -> None:
        nonlocal header, rows
        line = line.rstrip(b"\r")
        if header:
            header = False
        elif line:
            key = line.split(b",", 1)[0].strip().strip(b'"')
            bucket = zlib.crc32(key) % SKETCH_BUCKETS
            buckets[bucket] = (buckets[bucket] + zlib.crc32(line, 0x5BD1E995)) & _MASK
            rows += 1

    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        sha.update(chunk)
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            add(line)
    if rest:
        add(rest)
    return {"sha256": sha.hexdigest(), "rows": rows, "row_sketch": "".join(f"{b:08x}" for b in buckets)}


def sketch_distance(a: str, b: str) -> int | None:
    """How many buckets two row sketches differ in (a lower bound on the rows that differ, exact for a few);
    None when either is no sketch of :data:`SKETCH_BUCKETS` buckets."""
    width = 8 * SKETCH_BUCKETS
    if not (isinstance(a, str) and isinstance(b, str) and len(a) == len(b) == width):
        return None
    return sum(a[i : i + 8] != b[i : i + 8] for i in range(0, width, 8))

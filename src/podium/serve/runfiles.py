"""A run's files as the dashboard shows them: bounded reads that never follow a link out of the folder.

Everything in a run folder but ``record.json`` was written by the agent or for it, so it is hostile
input: files are opened through :func:`podium.untrusted.open_beneath` (no link followed at any level, regular files only), read up
to a cap (a log's tail, a code file's head), and decoded with replacement characters.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.paths import RunPaths
from podium.untrusted import UntrustedJSONError, iter_json_lines, loads_object, open_beneath

__all__ = ["LOGS", "Tail", "inside", "read_head", "read_jsonl", "read_record", "resource_charts", "tail"]

#: The logs a run page shows, by the name its URL uses.
LOGS = {"stdout": "agent.stdout.log", "stderr": "agent.stderr.log"}
_TAIL_BYTES = 64 * 1024
_HEAD_BYTES = 256 * 1024


@dataclass(frozen=True)
class Tail:
    """The end of a file: its text, its whole size, and whether the text starts mid-file."""

    text: str
    size: int
    cut: bool
    exists: bool


def inside(root: Path, path: Path) -> bool:
    """Whether ``path`` lies under ``root`` with no link on the way (what an agent could plant)."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return False
    if ".." in relative.parts:
        return False
    current = root
    for part in relative.parts:
        current = current / part
        if current.is_symlink():
            return False
    return True


def _open(root: Path, path: Path) -> int | None:
    """A descriptor of the regular file ``path`` below ``root``, every component opened without following a
    link (a FIFO or device, which would block or never end, gives None too)."""
    if not inside(root, path):
        return None
    return open_beneath(root, path.relative_to(root))


def tail(root: Path, path: Path, limit: int = _TAIL_BYTES) -> Tail:
    """The last ``limit`` bytes of a file under ``root``, from the start of a line where it was cut."""
    fd = _open(root, path)
    if fd is None:
        return Tail("", 0, False, False)
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - limit)
        data = os.pread(fd, limit, start)
    finally:
        os.close(fd)
    if start > 0 and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]
    return Tail(data.decode("utf-8", errors="replace"), size, start > 0, True)


def read_head(root: Path, path: Path, limit: int = _HEAD_BYTES) -> tuple[str, bool] | None:
    """(text, cut) of the first ``limit`` bytes of a file under ``root``; None when it cannot be read."""
    fd = _open(root, path)
    if fd is None:
        return None
    try:
        data = os.pread(fd, limit + 1, 0)
    finally:
        os.close(fd)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def read_jsonl(root: Path, path: Path, limit: int = 2000) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (at most ``limit``; an unreadable line is skipped)."""
    head = read_head(root, path, 16 * 1024 * 1024)
    if head is None:
        return []
    out = []
    for value in iter_json_lines(head[0].splitlines()):
        if value is not None:
            out.append(value)
        if len(out) >= limit:
            break
    return out


def read_record(run: RunPaths) -> dict[str, Any] | None:
    """The run's ``record.json`` (None while it runs, or when it cannot be read)."""
    head = read_head(run.root, run.record, 32 * 1024 * 1024)
    if head is None:
        return None
    try:
        return loads_object(head[0], max_bytes=32 * 1024 * 1024, what="record.json")
    except UntrustedJSONError:  # a record nested thousands deep is refused, not a crash of the page
        return None


def live_samples(run: RunPaths, points: int = 1200) -> list[dict[str, Any]]:
    """The samples a run in progress has written so far (``resources.jsonl``), thinned to about ``points``."""
    samples = read_jsonl(run.root, run.resources, limit=50_000)
    if len(samples) > points:
        stride = -(-len(samples) // points)
        samples = samples[::stride] + ([samples[-1]] if (len(samples) - 1) % stride else [])
    return samples


def resource_charts(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Charts (title, unit, SVG points) of a run's resource samples: memory in use, CPU cores busy, GPUs."""
    rows = [s for s in samples if isinstance(s, dict) and isinstance(s.get("t"), (int, float))]
    if len(rows) < 2:
        return []
    t = [float(s["t"]) for s in rows]
    charts = [_chart("memory in use", "GiB", t, [float(s.get("rss_bytes") or 0) / 2**30 for s in rows])]
    cpu = [float(s.get("cpu_seconds") or 0) for s in rows]
    busy = [0.0] + [
        max(0.0, (cpu[i] - cpu[i - 1]) / (t[i] - t[i - 1])) if t[i] > t[i - 1] else 0.0 for i in range(1, len(t))
    ]
    charts.append(_chart("CPU cores busy", "cores", t, busy))
    if any(s.get("gpu_percent") is not None for s in rows):
        charts.append(_chart("GPU utilisation", "%", t, [float(s.get("gpu_percent") or 0) for s in rows]))
    return charts


def _chart(title: str, unit: str, t: list[float], values: list[float]) -> dict[str, Any]:
    """A line chart's points in a 600 x 120 box (time across, the value up), and its axis ends."""
    width, height = 600.0, 120.0
    t_end = t[-1] if t[-1] > t[0] else t[0] + 1.0
    top = max(values) or 1.0
    points = " ".join(
        f"{(x - t[0]) / (t_end - t[0]) * width:.1f},{height - v / top * height:.1f}"
        for x, v in zip(t, values, strict=True)
    )
    return {"title": title, "unit": unit, "points": points, "top": top, "seconds": t_end, "n": len(t)}

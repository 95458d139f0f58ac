"""Running one node's code: a child process in its own session, under a time limit and a memory cap.

The code runs with the environment's Python in the node's folder; its standard output and error go
to ``output.log`` there. Every quarter second the resident memory of its whole process tree is
summed from ``/proc``; above the cap, or past the time limit, the whole session is killed, so code
that forks, eats memory or hangs cannot take the agent down with it, and the search goes on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Execution", "run_code", "tree_rss"]

_PAGE = os.sysconf("SC_PAGE_SIZE")
_TAIL_CHARS = 4000


@dataclass
class Execution:
    """How a node's code ended: exit code (None when killed), seconds, why it was killed, its output's end."""

    exit_code: int | None
    seconds: float
    killed_for: str | None
    output_tail: str
    peak_rss_bytes: int


def _children() -> dict[int, list[int]]:
    """Parent pid -> child pids, from every /proc/<pid>/stat (a process that exits meanwhile is skipped)."""
    tree: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            tree.setdefault(parent, []).append(int(stat.parent.name))
    return tree


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants (0 once they are gone)."""
    tree, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            fields = Path(f"/proc/{pid}/statm").read_text().split()
            total += int(fields[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_code(code: Path, workdir: Path, *, timeout_s: float, memory_bytes: int | None) -> Execution:
    """Run ``code`` (a Python file) in ``workdir``; see the module docstring."""
    log = workdir / "output.log"
    started = time.monotonic()
    killed_for = None
    peak = 0
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [sys.executable, str(code)],
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        while child.poll() is None:
            if time.monotonic() - started > timeout_s:
                killed_for = "time"
                break
            rss = tree_rss(child.pid)
            peak = max(peak, rss)
            if memory_bytes is not None and rss > memory_bytes:
                killed_for = "memory"
                break
            time.sleep(0.25)
        if killed_for is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
        code_ = child.wait()
    seconds = time.monotonic() - started
    with open(log, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4 * _TAIL_CHARS))
        tail = handle.read().decode("utf-8", "replace")[-_TAIL_CHARS:]
    if killed_for == "time":
        tail += f"\n[podium search: the code was stopped after {timeout_s:.0f} s, its time limit]"
    elif killed_for == "memory" and memory_bytes is not None:
        tail += (
            f"\n[podium search: the code was stopped when it used more than {memory_bytes / 2**30:.1f} GiB of memory]"
        )
    return Execution(None if killed_for else code_, seconds, killed_for, tail, peak)

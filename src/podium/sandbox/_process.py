"""Starting a command behind a gate, watching it against the wall clock, and /proc accounting."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from podium.sandbox._disk import DiskWatch
from podium.sandbox._gpu import GpuMonitor
from podium.sandbox._types import ResourceSample, SampleLog

SAMPLE_EVERY_SECONDS = 1.0
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# The child waits on this gate (a line on stdin) before it execs the command, so that the parent can
# put it into cgroups or set its rlimits first. Unlike ``preexec_fn`` this is safe when the harness
# runs several sandboxes from threads. The command's own stdin is /dev/null.
_GATE = 'read -r _ && exec "$@" </dev/null'


def spawn_gated(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None,
    stdout: IO[bytes],
    stderr: IO[bytes],
    pass_fds: Sequence[int] = (),
    ids: tuple[int, int] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` paused at the gate, in a new session (so its process group can be killed); as the
    user and group ``ids`` (no supplementary groups) when given."""
    return subprocess.Popen(
        ["/bin/sh", "-c", _GATE, "podium-gate", *argv],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
        user=None if ids is None else ids[0],
        group=None if ids is None else ids[1],
        extra_groups=None if ids is None else [],
    )


def open_gate(process: subprocess.Popen[bytes]) -> None:
    """Let the gated child exec its command."""
    assert process.stdin is not None
    process.stdin.write(b"go\n")
    process.stdin.close()


@dataclass
class Watched:
    """What watching a process until it ended (or was killed) saw."""

    exit_code: int | None
    timed_out: bool
    seconds: float
    max_rss_bytes: int
    samples: SampleLog = field(default_factory=SampleLog)
    over_disk: bool = False
    #: CPU time of the process and of the descendants it waited for (from ``wait4``).
    cpu_seconds: float | None = None


def watch(
    process: subprocess.Popen[bytes],
    *,
    wall_seconds: float,
    measure: Callable[[], tuple[float, int] | None],
    kill: Callable[[], None],
    gpus: GpuMonitor | None = None,
    disk: DiskWatch | None = None,
    samples_file: Path | None = None,
) -> Watched:
    """Wait for ``process``, sampling ``measure`` (and ``gpus``) every second; ``kill`` at the wall or disk limit."""
    started = time.monotonic()
    samples = SampleLog(live=samples_file)
    next_sample = SAMPLE_EVERY_SECONDS
    pidfd = os.pidfd_open(process.pid)
    try:
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= wall_seconds:
                kill()
                _, max_rss, cpu = _reap(process)
                return Watched(None, True, time.monotonic() - started, max_rss, samples, cpu_seconds=cpu)
            if elapsed >= next_sample:
                usage = measure()
                if usage is not None:
                    samples.add(sample_of(elapsed, usage, gpus))
                next_sample += SAMPLE_EVERY_SECONDS
                if disk is not None and disk.over(elapsed):
                    kill()
                    _, max_rss, cpu = _reap(process)
                    return Watched(None, False, time.monotonic() - started, max_rss, samples, True, cpu)
            readable, _, _ = select.select([pidfd], [], [], max(0.0, min(next_sample, wall_seconds) - elapsed))
            if readable:
                code, max_rss, cpu = _reap(process)
                return Watched(code, False, time.monotonic() - started, max_rss, samples, cpu_seconds=cpu)
    finally:
        os.close(pidfd)
        samples.close()


def sample_of(elapsed: float, usage: tuple[float, int], gpus: GpuMonitor | None) -> ResourceSample:
    """A resource sample from CPU/memory usage, with the GPUs' use read now when the run has GPUs."""
    gpu = gpus.sample() if gpus is not None else None
    if gpu is None:
        return ResourceSample(round(elapsed, 3), *usage)
    return ResourceSample(round(elapsed, 3), *usage, gpu.utilization_percent, gpu.memory_used_bytes)


def _reap(process: subprocess.Popen[bytes]) -> tuple[int, int, float]:
    """Wait for the process with wait4 (for its peak RSS and CPU time) and tell Popen it is gone."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss is in KiB


def descendants(root: int) -> list[int]:
    """``root`` and every process below it, found through the parent pids in /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = stat_fields(int(entry.name))
            if stat is not None:
                children.setdefault(int(stat[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def kill_tree(root: int, timeout: float = 5.0) -> None:
    """SIGKILL ``root``, its process group and every descendant, then wait until they have exited.

    Exited means dead or a zombie: a zombie holds no memory and runs nothing. When bwrap's pid 1 is
    among them, its exit also means that the kernel has emptied its pid namespace.
    """
    victims = descendants(root)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(root, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(_running(pid) for pid in victims) and time.monotonic() < deadline:
        time.sleep(0.01)


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    stat = stat_fields(pid)
    return stat is not None and stat[0] != "Z"


def proc_usage(pids: Sequence[int] | set[int]) -> tuple[float, int]:
    """CPU seconds (of live processes only) and resident memory summed over ``pids``."""
    cpu, rss = 0.0, 0
    for pid in pids:
        stat = stat_fields(pid)
        if stat is not None:
            cpu += (int(stat[11]) + int(stat[12])) / _CLOCK_TICKS  # utime, stime
            rss += int(stat[21]) * _PAGE_SIZE
    return cpu, rss


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state is [0], ppid [1])."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()

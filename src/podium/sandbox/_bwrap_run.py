"""Running bwrap and watching it: the run's cgroup, the start gate, sampling, killing at a limit.

:func:`run_in_cgroup` starts bwrap (its options already built by :mod:`podium.sandbox._bwrap`) held
at a gate, moves it into the run's cgroup and onto its CPUs, lets the network be observed
(:class:`StartGate`), then samples it every second (refreshing the run's generated ``/proc`` files,
:mod:`podium.sandbox._procfs`) until it ends or passes a limit, and kills what is left in the group.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import time
from pathlib import Path
from typing import IO, Any

from podium.sandbox._cgroup import RunCgroup, new_run_id
from podium.sandbox._disk import DiskWatch
from podium.sandbox._gpu import GpuMonitor
from podium.sandbox._network import observe_network
from podium.sandbox._process import Watched, descendants, kill_tree, open_gate, proc_usage, spawn_gated, watch
from podium.sandbox._procfs import ProcView
from podium.sandbox._types import ExecResult, KilledFor, Limits

__all__ = ["StartGate", "kill_run", "run_in_cgroup"]

_GATE_TIMEOUT_SECONDS = 30.0
_MAX_INFO_BYTES = 1 << 16


def run_in_cgroup(
    argv: list[str],
    limits: Limits,
    out: IO[bytes],
    err: IO[bytes],
    disk: DiskWatch | None,
    *,
    pass_fds: tuple[int, ...] = (),
    ids: tuple[int, int] | None = None,
    samples_file: Path | None = None,
    cpus: tuple[int, ...] | None = None,
    gate: StartGate | None = None,
    view: ProcView | None = None,
) -> ExecResult:
    """Run ``argv`` (bwrap) in a new cgroup for ``limits``, pinned to ``cpus``, watched until it ends."""
    cgroup = RunCgroup.create(new_run_id(), limits)
    try:
        watched = _watch_in(cgroup, argv, limits, out, err, disk, pass_fds, ids, samples_file, cpus, gate, view)
        killed_for: KilledFor | None = (
            "time" if watched.timed_out else "disk" if watched.over_disk else "memory" if cgroup.oom_killed() else None
        )
        peak = cgroup.peak_memory_bytes()
        if peak is None:
            peak = max(watched.max_rss_bytes, watched.samples.max_rss_bytes)
        cpu_seconds = cgroup.cpu_seconds()
    finally:
        cgroup.kill_all()  # nothing can outlive bwrap's pid namespace, but make sure before removing the groups
        cgroup.remove()
    return ExecResult(
        exit_code=watched.exit_code,
        timed_out=watched.timed_out,
        killed_for=killed_for,
        seconds=watched.seconds,
        peak_memory_bytes=peak,
        samples=list(watched.samples),
        warnings=cgroup.warnings,
        cpu_seconds=cpu_seconds if cpu_seconds is not None else watched.cpu_seconds,
        network=gate.network if gate is not None else None,
    )


def _watch_in(
    cgroup: RunCgroup,
    argv: list[str],
    limits: Limits,
    out: IO[bytes],
    err: IO[bytes],
    disk: DiskWatch | None,
    pass_fds: tuple[int, ...],
    ids: tuple[int, int] | None,
    samples_file: Path | None = None,
    cpus: tuple[int, ...] | None = None,
    gate: StartGate | None = None,
    view: ProcView | None = None,
) -> Watched:
    # as root, bwrap itself runs as the agent's unprivileged id: the user namespace it makes then maps the
    # agent to that id, never to host root (which may write /proc/sys whatever the capabilities)
    process = spawn_gated(
        argv, env={"PATH": "/usr/bin:/bin"}, cwd=Path("/"), stdout=out, stderr=err, pass_fds=pass_fds, ids=ids
    )
    try:
        if gate is not None:
            gate.spawned()
        cgroup.enter(process.pid, limits)
        if cpus is not None:
            os.sched_setaffinity(process.pid, cpus)
        open_gate(process)
        if gate is not None:
            gate.observe_and_release()

        def measure() -> tuple[float, int]:
            cpu, memory = cgroup.cpu_seconds(), cgroup.memory_bytes()
            if cpu is None or memory is None:
                proc_cpu, proc_rss = proc_usage(cgroup.pids() or descendants(process.pid))
                cpu, memory = proc_cpu if cpu is None else cpu, proc_rss if memory is None else memory
            if view is not None:  # the run's /proc/stat and meminfo, current
                view.refresh(memory)
            return cpu, memory

        return watch(
            process,
            wall_seconds=limits.wall_seconds,
            measure=measure,
            kill=lambda: kill_run(process.pid, cgroup),
            gpus=GpuMonitor(limits.gpus) if limits.gpus else None,
            disk=disk,
            samples_file=samples_file,
        )
    finally:
        if process.returncode is None:  # the harness itself failed or was interrupted
            kill_run(process.pid, cgroup)
            process.wait()


class StartGate:
    """bwrap's ``--info-fd`` (which names the sandbox's pid 1 once its namespaces exist) and ``--block-fd`` (which
    holds the command until a byte arrives): the run's network is observed in between
    (:func:`~podium.sandbox._network.observe_network`), before the agent's first instruction."""

    def __init__(self) -> None:
        self._info_read, self._info_write = os.pipe()
        self._block_read, self._block_write = os.pipe()
        self.network: dict[str, Any] | None = None

    def __enter__(self) -> StartGate:
        return self

    def __exit__(self, *exc: object) -> None:
        for name in ("_info_read", "_info_write", "_block_read", "_block_write"):
            self._close(name)

    def _close(self, name: str) -> None:
        fd = getattr(self, name)
        if fd is not None:
            os.close(fd)
            setattr(self, name, None)

    @property
    def child_fds(self) -> tuple[int | None, int | None]:
        """The descriptors bwrap inherits."""
        return self._info_write, self._block_read

    def options(self) -> list[str]:
        return ["--info-fd", str(self._info_write), "--block-fd", str(self._block_read)]

    def spawned(self) -> None:
        """bwrap started: close this side's copies of its ends (so that its exit reads as the end of its info)."""
        self._close("_info_write")
        self._close("_block_read")

    def observe_and_release(self, timeout: float = _GATE_TIMEOUT_SECONDS) -> None:
        """Read bwrap's info, observe the sandbox's network through its pid 1, then let the command run."""
        try:
            pid = self._child_pid(timeout)
            self.network = (
                observe_network(pid)
                if pid is not None
                else {"error": "bubblewrap ended before its sandbox started, or did not say its pid"}
            )
        finally:
            with contextlib.suppress(OSError):
                os.write(self._block_write, b"1")
            self._close("_block_write")

    def _child_pid(self, timeout: float) -> int | None:
        assert self._info_read is not None
        deadline = time.monotonic() + timeout
        data = b""
        while len(data) < _MAX_INFO_BYTES:
            ready, _, _ = select.select([self._info_read], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._info_read, 4096) if ready else b""
            if not chunk:
                return None
            data += chunk
            with contextlib.suppress(ValueError):
                pid = json.loads(data).get("child-pid")
                return pid if isinstance(pid, int) and pid > 0 else None
        return None


def kill_run(outer_pid: int, cgroup: RunCgroup) -> None:
    """Kill bwrap and everything below it. Killing bwrap's pid 1 ends its whole pid namespace at once."""
    kill_tree(outer_pid)
    cgroup.kill_all()

"""Watching a Docker run: letting it start, its output, its end, its usage, and stopping it with or without the
engine."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from podium.sandbox._cgroup import CGROUP_ROOT, RunCgroup, remove_abandoned
from podium.sandbox._loopback import LoopbackRelay
from podium.sandbox._network import observe_network
from podium.sandbox._types import Limits

__all__ = [
    "STOP_TIMEOUT_SECONDS",
    "Waiter",
    "briefly",
    "cgroup_stats",
    "engine_lost",
    "kill_settled",
    "pump",
    "release",
    "remove_run_groups",
    "start_error",
    "stats",
    "stop",
    "sweep_abandoned_groups",
]

STOP_TIMEOUT_SECONDS = 30


def pump(stream: Iterator[tuple[bytes | None, bytes | None]], out: Any, err: Any) -> None:
    """Copy the container's demultiplexed output into the two log files as it arrives."""
    with contextlib.suppress(Exception):
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.write(chunk_out)
                out.flush()
            if chunk_err:
                err.write(chunk_err)
                err.flush()


class Waiter(threading.Thread):
    """Waits for the container to end; ``lost`` says why if the engine stopped answering first."""

    def __init__(self, container: Any) -> None:
        super().__init__(name="podium-docker-wait", daemon=True)
        self.container = container
        self.done = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        try:
            while True:
                try:
                    self.container.wait(timeout=3600)
                    return
                except Exception as error:  # a read timeout on a long run: keep waiting; anything else: lost
                    if "timed out" not in str(error).lower():
                        self.lost = f"{type(error).__name__}: {error}"
                        return
        finally:
            self.done.set()


def stop(container: Any, group: RunCgroup | None, waiter: Waiter) -> bool:
    """End the run's processes: through its cgroup (needs no engine), then through the engine if it answers.
    Whether the run's cgroup is known to be empty now."""
    emptied = group.kill_all() if group is not None else False
    if waiter.lost is None:
        briefly(container.kill, 10)
    waiter.done.wait(STOP_TIMEOUT_SECONDS)
    return emptied


def kill_settled(group: RunCgroup, quiet_seconds: float = 2.0) -> bool:
    """Kill the run's processes, and keep killing until its cgroup stays empty for ``quiet_seconds``: a start
    the dead engine left half-done can still spawn the container's first process after the first round."""
    deadline = time.monotonic() + quiet_seconds + 10
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        if group.pids():
            if not group.kill_all():
                return False
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_seconds:
            return True
        time.sleep(0.05)
    return False


def briefly(call: Any, seconds: float) -> None:
    """Call ``call`` (an engine request), ignoring its errors, waiting for it at most ``seconds`` (a hung engine)."""

    def quietly() -> None:
        with contextlib.suppress(Exception):
            call()

    thread = threading.Thread(target=quietly, name="podium-docker-call", daemon=True)
    thread.start()
    thread.join(seconds)


def engine_lost(seconds: float, why: str, killed: bool) -> str:
    outcome = (
        "its processes were killed through the run's cgroup"
        if killed
        else "podium could not kill its processes without the engine (no local cgroup): the container may still run"
    )
    return (
        f"the Docker engine stopped answering {seconds:.0f} s into the run ({why}); {outcome}. This is the "
        "harness's failure, not the agent's: restart the engine (scripts/dockerd.sh) and rerun"
    )


def stats(container: Any) -> tuple[float, int, int | None] | None:
    """CPU seconds, memory in use and peak memory (cgroup v1) of a running container, or None."""
    try:
        stats = container.stats(stream=False, one_shot=True)
    except Exception:
        return None
    cpu_ns = (stats.get("cpu_stats") or {}).get("cpu_usage", {}).get("total_usage")
    memory = stats.get("memory_stats") or {}
    if cpu_ns is None or "usage" not in memory:
        return None
    return cpu_ns / 1e9, int(memory["usage"]), memory.get("max_usage")


def cgroup_stats(group: RunCgroup) -> tuple[float, int, int | None] | None:
    cpu, memory = group.cpu_seconds(), group.memory_bytes()
    if cpu is None or memory is None:
        return None
    return cpu, memory, group.peak_memory_bytes()


def sweep_abandoned_groups() -> None:
    """Empty ``podium/<run>`` parent groups of killed harnesses, in every hierarchy the runtime filled."""
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            if (hierarchy / "cgroup.procs").is_file():
                remove_abandoned(hierarchy / "podium")


def remove_run_groups(run_id: str, group: RunCgroup) -> None:
    """Remove the run's parent groups: podium's own and those the runtime made in the other controllers."""
    group.remove()
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            path = hierarchy / "podium" / run_id
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    for child in sorted(path.iterdir(), reverse=True):
                        if child.is_dir():
                            child.rmdir()
                    path.rmdir()


def release(
    container: Any, relays: Mapping[int, Path], ready: Path | None, held: contextlib.ExitStack
) -> dict[str, Any]:
    """Observe the held container's network, listen on its loopback for its socket mounts' ports (until ``held``
    closes), then let its command start; the network observed."""
    try:
        container.reload()
        pid = int(container.attrs["State"].get("Pid") or 0)
        if pid <= 0:
            return {"error": "the container ended before its network could be observed"}
        network = observe_network(pid)
        if relays:
            held.callback(LoopbackRelay(pid, relays).start().stop)
        return network
    finally:
        if ready is not None:
            # O_RDWR never blocks on a FIFO; the line waits in the pipe until the container's shell reads it
            fd = os.open(ready / "ready", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            held.callback(os.close, fd)
            os.write(fd, b"go\n")


def start_error(error: Any, limits: Limits) -> str:
    """The one-line error for a container the engine would not start (GPUs named where they are why)."""
    text = str(getattr(error, "explanation", None) or error)
    if limits.gpus and ("device driver" in text or "gpu" in text.lower()):
        return (
            f"Docker could not give the container GPU(s) {list(limits.gpus)}: {text}. Fix: install the NVIDIA "
            "Container Toolkit on this host and register it with the engine (nvidia-ctk runtime configure "
            "--runtime=docker, then restart dockerd), or run with --gpus 0."
        )
    return f"Docker could not start the run's container: {text}"

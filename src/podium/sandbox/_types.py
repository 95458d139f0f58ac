"""The sandbox interface: what a run is given (mounts, limits) and what it reports (ExecResult)."""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from podium.errors import PodiumError

KilledFor = Literal["time", "memory", "disk"]


@dataclass(frozen=True)
class Mount:
    """A host path (``source``) shown at ``target`` inside the sandbox; read-only unless ``writable``."""

    source: Path
    target: str
    writable: bool = False
    #: For a Unix socket: also reachable at ``127.0.0.1:loopback_port`` inside the sandbox (docker).
    loopback_port: int | None = None


@dataclass(frozen=True)
class Limits:
    """What one run may use. ``None`` means no cap (the wall-clock limit is always enforced)."""

    wall_seconds: float
    memory_bytes: int | None = None
    pids: int | None = 1024
    cpus: float | None = None
    gpus: tuple[int, ...] = ()  # host GPU indices (as nvidia-smi numbers them) given to this run
    shm_bytes: int | None = None  # size of /dev/shm where the sandbox sets one (docker); None: a default
    disk_bytes: int | None = None  # what the writable mounts may hold; the run is killed above it


@dataclass(frozen=True)
class ResourceSample:
    """The run's usage ``t`` seconds after it started: CPU seconds so far and memory in use now.

    ``gpu_percent`` (mean utilisation) and ``gpu_memory_bytes`` cover the run's GPUs; None without any.
    """

    t: float
    cpu_seconds: float
    rss_bytes: int
    gpu_percent: float | None = None
    gpu_memory_bytes: int | None = None


class SampleLog(list[ResourceSample]):
    """Resource samples of one run, at most ``limit`` of them, evenly spaced over the whole run.

    Samples arrive every second; when the log is full every other one is dropped and from then on
    only every other arrival is kept (the spacing doubles), so a 24-hour run keeps about as many
    points as a half-hour one. CPU seconds are cumulative, so no CPU time is lost; the highest
    memory reading of all, kept or dropped, stays in ``max_rss_bytes``.
    """

    def __init__(self, limit: int = 1800, live: Path | None = None) -> None:
        super().__init__()
        self.limit = max(2, limit)
        self.stride = 1
        self.seen = 0
        self.max_rss_bytes = 0
        #: ``live``: each kept sample is also appended there as one JSON line while the run goes (what a
        #: dashboard draws before the record exists). A harness-owned path: it is opened without following links.
        self._live = _open_live(live) if live is not None else None

    def add(self, sample: ResourceSample) -> None:
        self.max_rss_bytes = max(self.max_rss_bytes, sample.rss_bytes)
        if self.seen % self.stride == 0:
            self.append(sample)
            self._write_live(sample)
            if len(self) > self.limit:
                del self[1::2]
                self.stride *= 2
        self.seen += 1

    def _write_live(self, sample: ResourceSample) -> None:
        if self._live is None:
            return
        line = json.dumps({k: v for k, v in asdict(sample).items() if v is not None}, separators=(",", ":"))
        try:
            os.write(self._live, line.encode() + b"\n")
        except OSError:  # a full disk: the live view stops, the run and its record do not
            self.close()

    def close(self) -> None:
        """Stop writing the live file (the samples stay in the log)."""
        if self._live is not None:
            os.close(self._live)
            self._live = None


def _open_live(path: Path) -> int | None:
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        return None  # no live view; the samples still reach the record


@dataclass
class ExecResult:
    """How a run ended.

    ``exit_code`` is ``None`` when the harness killed the run (for time or disk). ``killed_for`` says
    why the run was killed (``"time"``, ``"memory"`` or ``"disk"``), ``warnings`` lists every limit or
    isolation that was asked for but not enforced; ``network`` is what the agent's network was as it
    started, ``cpu_seconds`` the CPU time the whole run used.
    """

    exit_code: int | None
    timed_out: bool
    killed_for: KilledFor | None
    seconds: float
    peak_memory_bytes: int | None
    samples: list[ResourceSample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: CPU time of every process of the run, read when it ended (None where it could not be).
    cpu_seconds: float | None = None
    #: The agent's network as observed when the run started (:mod:`podium.sandbox._network`).
    network: dict[str, Any] | None = None


class Sandbox(Protocol):
    """Runs one command under limits. Implementations differ only in how much they isolate it."""

    name: str
    isolated: bool

    def run(
        self,
        command: Sequence[str],
        *,
        mounts: Sequence[Mount],
        env: Mapping[str, str],
        limits: Limits,
        workdir: str,
        stdout: Path,
        stderr: Path,
        samples_file: Path | None = None,
        hidden: Sequence[Path] = (),
    ) -> ExecResult:
        """Run ``command`` in ``workdir`` (a path inside the sandbox) and wait for it to end; with
        ``samples_file`` (a host path outside every mount) its resource samples are appended there as they come.
        ``hidden`` are host folders (the data dir, the runs folder) an isolating sandbox never shows, not even
        through a folder on the host Python's path that lies in or above one of them."""
        ...


def check_request(
    command: Sequence[str], mounts: Sequence[Mount], limits: Limits, workdir: str, logs: Sequence[Path] = ()
) -> None:
    """Reject a run request that no sandbox could honour, naming the offending value; then make the
    folders of the ``logs`` files (the run's stdout and stderr)."""
    if not command:
        raise PodiumError("The sandbox command is empty. Fix: pass the program and its arguments.")
    if not limits.wall_seconds > 0:
        raise PodiumError(f"Limits.wall_seconds must be positive, got {limits.wall_seconds!r}.")
    for name in ("memory_bytes", "pids", "cpus", "shm_bytes", "disk_bytes"):
        value = getattr(limits, name)
        if value is not None and not value > 0:
            raise PodiumError(f"Limits.{name} must be positive or None, got {value!r}.")
    if len(set(limits.gpus)) != len(limits.gpus) or any(not isinstance(i, int) or i < 0 for i in limits.gpus):
        raise PodiumError(f"Limits.gpus must be distinct GPU indices (0, 1, ...), got {limits.gpus!r}.")
    check_inside_path(workdir, "workdir")
    for mount in mounts:
        check_inside_path(mount.target, "Mount.target")
        if mount.target == "/":
            raise PodiumError(f"A mount cannot replace the sandbox root: {mount}.")
        if not mount.source.exists():
            raise PodiumError(f"Mount source {str(mount.source)!r} does not exist. Fix: create it or drop the mount.")
    targets = [m.target for m in mounts]
    if len(set(targets)) != len(targets):
        raise PodiumError(f"Two mounts share a target: {sorted(targets)}.")
    source = host_path_of(workdir, mounts)
    if source is not None and not source.is_dir():
        raise PodiumError(f"workdir {workdir!r} lies in a mount but {str(source)!r} is not a directory on the host.")
    for path in logs:
        path.parent.mkdir(parents=True, exist_ok=True)


def check_inside_path(path: str, what: str) -> None:
    """A path inside the sandbox must be absolute and normalised (no ``..``, no trailing ``/``)."""
    if not path.startswith("/") or posixpath.normpath(path) != path or path.startswith("//"):
        raise PodiumError(f"{what} must be an absolute, normalised path inside the sandbox, got {path!r}.")


def is_within(path: str, parent: str) -> bool:
    """Whether the inside path ``path`` is ``parent`` or lies below it."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def host_path_of(inside: str, mounts: Sequence[Mount]) -> Path | None:
    """The host path behind an inside path, through the deepest mount that covers it (None if none does)."""
    covering = [m for m in mounts if is_within(inside, m.target)]
    if not covering:
        return None
    mount = max(covering, key=lambda m: len(m.target))
    return mount.source.joinpath(inside[len(mount.target) :].lstrip("/"))

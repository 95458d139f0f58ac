"""One run's cgroup v1 groups: caps (memory, pids, cpu), accounting, and killing every task of the run.

Each controller is mounted on its own hierarchy under ``/sys/fs/cgroup/<controller>``; a run gets
``<controller>/podium/<run id>`` in each one that is mounted and writable. A run id starts with the
token of the podium process that owns the run (:func:`new_run_id`, :mod:`podium.owner`), so the
groups of a killed harness are told from a live one's by that token alone. A controller that cannot
be used turns into a warning when the run asked for its cap, and silently into /proc accounting
when it only served measurement.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
import uuid
from pathlib import Path

from podium import owner
from podium.sandbox._types import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
CFS_PERIOD_US = 100_000
_CAPPED_BY = {"memory": "memory_bytes", "pids": "pids", "cpu": "cpus"}


class RunCgroup:
    """The cgroups of one run. Create with :meth:`create`, put the first process in with :meth:`enter`."""

    def __init__(self, dirs: dict[str, Path], warnings: list[str]) -> None:
        self.dirs = dirs
        self.warnings = warnings

    @classmethod
    def create(cls, run_id: str, limits: Limits) -> RunCgroup:
        """Make the run's groups and write its caps; what cannot be done is recorded in ``warnings``."""
        group = cls({}, [])
        for controller in ("memory", "pids", "cpuacct", "cpu"):
            if controller == "cpu" and limits.cpus is None:
                continue
            hierarchy = CGROUP_ROOT / controller
            try:
                if not (hierarchy / "cgroup.procs").is_file():  # not mounted: do not mkdir into a plain tmpfs
                    raise FileNotFoundError(f"{hierarchy} is not a cgroup v1 hierarchy")
                remove_abandoned(hierarchy / "podium")
                path = hierarchy / "podium" / run_id
                path.mkdir(parents=True)
                group.dirs[controller] = path
                group._write_cap(controller, limits)
            except OSError as error:
                group._give_up(controller, limits, f"{hierarchy}: {error}")
        return group

    def _write_cap(self, controller: str, limits: Limits) -> None:
        path = self.dirs[controller]
        if controller == "memory" and limits.memory_bytes is not None:
            (path / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            if (path / "memory.memsw.limit_in_bytes").exists():  # with swap, cap RAM + swap alike
                (path / "memory.memsw.limit_in_bytes").write_text(str(limits.memory_bytes))
        elif controller == "pids" and limits.pids is not None:
            (path / "pids.max").write_text(str(limits.pids))
        elif controller == "cpu" and limits.cpus is not None:
            (path / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(max(1000, round(limits.cpus * CFS_PERIOD_US))))

    def _give_up(self, controller: str, limits: Limits, reason: str) -> None:
        path = self.dirs.pop(controller, None)
        if path is not None:
            with contextlib.suppress(OSError):
                path.rmdir()
        field = _CAPPED_BY.get(controller)
        value = getattr(limits, field) if field else None
        if value is not None:
            self.warnings.append(
                f"Limits.{field}={value} NOT enforced: the cgroup v1 {controller!r} controller is not usable "
                f"({reason}). Fix: run podium as root with /sys/fs/cgroup/{controller} mounted read-write."
            )

    def enter(self, pid: int, limits: Limits) -> None:
        """Move ``pid`` (not yet running the agent) into every group; its descendants inherit them."""
        for controller, path in list(self.dirs.items()):
            try:
                (path / "cgroup.procs").write_text(str(pid))
            except OSError as error:
                self._give_up(controller, limits, f"cannot join {path}: {error}")

    def _read(self, controller: str, name: str) -> str | None:
        path = self.dirs.get(controller)
        if path is None:
            return None
        try:
            return (path / name).read_text()
        except OSError:
            return None

    def pids(self) -> set[int]:
        """Every live process of the run, in its groups and in groups below them (a container runtime makes
        the container's own group inside the run's); zombies leave a group at exit."""
        found: set[int] = set()
        for path in self.dirs.values():
            for top, _, files in os.walk(path):
                if "cgroup.procs" in files:
                    with contextlib.suppress(OSError, ValueError):
                        found.update(int(line) for line in Path(top, "cgroup.procs").read_text().split())
        return found

    def memory_bytes(self) -> int | None:
        """Memory charged to the run now (the figure the cap applies to; includes tmpfs and page cache)."""
        text = self._read("memory", "memory.usage_in_bytes")
        return int(text) if text else None

    def peak_memory_bytes(self) -> int | None:
        """The most memory the run was charged at once."""
        text = self._read("memory", "memory.max_usage_in_bytes")
        return int(text) if text else None

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process of the run, exited ones included."""
        text = self._read("cpuacct", "cpuacct.usage")
        return int(text) / 1e9 if text else None

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the run for exceeding the memory cap."""
        text = self._read("memory", "memory.oom_control") or ""
        fields = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        if "oom_kill" in fields:
            return int(fields["oom_kill"]) > 0
        return int(self._read("memory", "memory.failcnt") or 0) > 0  # kernels before 4.13: hit the cap

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process of the run until none is left; a process forked meanwhile is caught next round."""
        deadline = time.monotonic() + timeout
        while pids := self.pids():
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        return True

    def remove(self, timeout: float = 5.0) -> None:
        """Delete the run's groups (a group can only go once its last task has exited)."""
        deadline = time.monotonic() + timeout
        for controller, path in self.dirs.items():
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as error:
                    if time.monotonic() > deadline:
                        self.warnings.append(f"could not remove the {controller} cgroup {path}: {error}")
                        break
                    time.sleep(0.02)


def new_run_id() -> str:
    """A run's id: this harness's owner token and a random part."""
    return f"{owner.own_token()}-{uuid.uuid4().hex[:8]}"


def sweep_abandoned() -> None:
    """:func:`remove_abandoned` in every cgroup v1 hierarchy (a container runtime fills others than podium)."""
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            if (hierarchy / "cgroup.procs").is_file():
                remove_abandoned(hierarchy / "podium")


def remove_abandoned(parent: Path, min_age_s: float = 600.0) -> None:
    """Remove the run groups left behind by a harness that was killed (SIGKILL cannot clean up).

    A group whose name carries an owner token goes as soon as that owner no longer runs (any process
    still in it is killed first, groups nested in it go too); a live owner's group is never touched.
    A group named before owner tokens goes once empty and older than ``min_age_s``: a live run's group
    is empty for the moment between its creation and its first process entering it.
    """
    if not parent.is_dir():
        return
    now = time.time()
    for group in parent.iterdir():
        try:
            if not group.is_dir() or group.is_symlink():
                continue
            token = owner.token_in(group.name)
            if token is not None:
                if not owner.alive(token):
                    _remove_tree(group)
            elif now - group.stat().st_mtime > min_age_s and not (group / "cgroup.procs").read_text().strip():
                group.rmdir()
        except OSError:
            pass  # in use by a live run, or already gone


def _remove_tree(group: Path, timeout: float = 2.0) -> None:
    """Kill what is left in a dead owner's group and in the groups below it, then remove them, deepest first."""
    deadline = time.monotonic() + timeout
    for top, _, _ in sorted(os.walk(group), key=lambda entry: -entry[0].count("/")):
        while True:
            with contextlib.suppress(OSError, ValueError):
                for pid in (Path(top) / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            try:
                os.rmdir(top)
                break
            except FileNotFoundError:
                break
            except OSError as error:
                if error.errno != errno.EBUSY or time.monotonic() > deadline:  # not ours to remove, or stuck
                    return
                time.sleep(0.02)  # its last tasks are still exiting

"""The agent's own limits, as it sees them from inside: its CPUs, its memory, its threads.

A cgroup caps what a run may use, but a program sizes itself from what it sees: ``nproc`` and
``os.sched_getaffinity`` (joblib's ``n_jobs=-1``, PyTorch's threads), ``/proc/meminfo`` (batch sizes,
``psutil``), ``OMP_NUM_THREADS`` and its like (BLAS). So an agent capped at 1 CPU and 2 GiB on a
96-core host would start 96 workers throttled onto one CPU's share. Here:

* **CPUs**: a run with a CPU cap is pinned (its CPU affinity, which its processes inherit) to
  ``ceil(cpus)`` of the CPUs this process may use, the ones the fewest of this process's runs hold now,
  so concurrent runs spread over the machine (:func:`cpu_share`); docker gets them as ``cpuset_cpus``.
  The cap itself stays the cgroup's CFS quota. ``/sys/devices/system/cpu/online`` is replaced by a file
  listing those CPUs (:func:`write_cpu_online`), as LXCFS does, so that ``os.cpu_count()`` and
  ``multiprocessing.cpu_count()`` (glibc's count of online CPUs, which ignores the affinity) agree too.
* **Threads**: ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
  ``PYTHON_CPU_COUNT`` (``os.cpu_count()`` from Python 3.13) are set to that number of CPUs, unless the
  run's own environment (the agent's ``agent.yaml``) sets them (:func:`thread_env`).
* **Memory**: ``/proc/meminfo`` is replaced by a generated file (:func:`meminfo`) whose ``MemTotal``
  is the cap and ``MemFree``/``MemAvailable`` what the run's use leaves of it (never more than the host
  has available), with no swap; :class:`podium.sandbox._procfs.ProcView` rewrites it every second.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from podium.sandbox._types import Limits

__all__ = [
    "CPU_ONLINE",
    "THREAD_VARIABLES",
    "cpu_list",
    "cpu_share",
    "host_available_bytes",
    "host_memory_bytes",
    "meminfo",
    "thread_env",
    "write_cpu_online",
    "write_meminfo",
]

#: Where glibc (``sysconf(_SC_NPROCESSORS_ONLN)``, Python's ``os.cpu_count()``) counts the online CPUs.
CPU_ONLINE = "/sys/devices/system/cpu/online"

#: What a run's environment sets to its number of CPUs (unless the run's own environment sets it).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PYTHON_CPU_COUNT")
#: meminfo fields kept as the host has them (sizes of pages, not amounts of memory).
_KEPT_FIELDS = ("Hugepagesize",)
_KIB = 1024

_lock = threading.Lock()
_holders: dict[int, int] = {}  # CPU -> how many of this process's runs are pinned to it now


@contextlib.contextmanager
def cpu_share(limits: Limits) -> Iterator[tuple[int, ...] | None]:
    """The CPUs a run with ``limits`` is pinned to while the block runs (None without a CPU cap): ``ceil(cpus)``
    of those this process may use (all of them when it asks for more), the least held first."""
    if limits.cpus is None:
        yield None
        return
    available = sorted(os.sched_getaffinity(0))
    count = min(len(available), max(1, math.ceil(limits.cpus)))
    with _lock:
        chosen = tuple(sorted(sorted(available, key=lambda cpu: (_holders.get(cpu, 0), cpu))[:count]))
        for cpu in chosen:
            _holders[cpu] = _holders.get(cpu, 0) + 1
    try:
        yield chosen
    finally:
        with _lock:
            for cpu in chosen:
                _holders[cpu] -= 1


def thread_env(cpus: tuple[int, ...] | None, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`THREAD_VARIABLES` set to the number of ``cpus`` where ``env`` does not set them."""
    if cpus is None:
        return dict(env)
    return {**{name: str(len(cpus)) for name in THREAD_VARIABLES}, **env}


def cpu_list(cpus: tuple[int, ...]) -> str:
    """``cpus`` in the kernel's list format, as ``/sys/devices/system/cpu/online`` writes it: ``0-2,5``."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def write_cpu_online(folder: Path, cpus: tuple[int, ...] | None) -> Path | None:
    """The run's ``/sys/devices/system/cpu/online`` (its pinned ``cpus``) written into ``folder`` (mode 0644); None
    without a CPU cap."""
    if not cpus:
        return None
    path = folder / "cpu-online"
    path.write_text(cpu_list(cpus) + "\n")
    path.chmod(0o644)
    return path


def host_memory_bytes(meminfo_text: str | None = None) -> int | None:
    """This machine's ``MemTotal`` in bytes (from ``/proc/meminfo``), None where it cannot be read."""
    fields = _fields(meminfo_text if meminfo_text is not None else _read_meminfo())
    total = fields.get("MemTotal")
    return total * _KIB if total is not None else None


def meminfo(cap_bytes: int, host_text: str | None = None, used_bytes: int = 0, available: int | None = None) -> str:
    """A ``/proc/meminfo`` for a run capped at ``cap_bytes`` that uses ``used_bytes`` now, in the host's layout
    (``host_text``, default this machine's): ``MemTotal`` the cap (or the host's total, when less), ``MemFree``
    and ``MemAvailable`` what of it the run leaves (never more than the host has available now, or ``available`` bytes when given), every other
    amount 0 (no swap, no cache of its own). Amounts are 12 digits wide, so its size never changes."""
    text = host_text if host_text is not None else _read_meminfo()
    fields = _fields(text)
    cap = cap_bytes // _KIB
    total = min(cap, fields.get("MemTotal", cap))
    host_free = fields.get("MemAvailable", fields.get("MemFree", total)) if available is None else available // _KIB
    free = max(0, min(total - used_bytes // _KIB, host_free))
    values = {"MemTotal": total, "MemFree": free, "MemAvailable": free}
    lines = []
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and name not in _KEPT_FIELDS:
            lines.append(f"{name + ':':<16}{values.get(name, 0):>12} kB")
        elif name:
            lines.append(line)
    if "MemTotal" not in fields:  # not Linux's layout: the three lines that matter
        lines = [f"{name + ':':<16}{value:>12} kB" for name, value in values.items()]
    return "\n".join(lines) + "\n"


def write_meminfo(folder: Path, limits: Limits) -> Path | None:
    """The run's ``meminfo`` written into ``folder`` (mode 0644) when it has a memory cap; None without one."""
    if limits.memory_bytes is None:
        return None
    path = folder / "meminfo"
    path.write_text(meminfo(limits.memory_bytes))
    path.chmod(0o644)
    return path


def host_available_bytes() -> int | None:
    """This machine's ``MemAvailable`` (``MemFree`` where it has none) in bytes, None where it cannot be read."""
    fields = _fields(_read_meminfo())
    free = fields.get("MemAvailable", fields.get("MemFree"))
    return free * _KIB if free is not None else None


def _read_meminfo() -> str:
    try:
        return Path("/proc/meminfo").read_text()
    except OSError:
        return ""


def _fields(text: str) -> dict[str, int]:
    found = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            found[name] = int(parts[0])
    return found

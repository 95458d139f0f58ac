"""The compute a run had: the machine, what the run was given, what it used (``record.compute``).

``run_compute`` writes what a record keeps::

    {"cpu_model": "AMD EPYC 7763 64-Core Processor", "cpus": 2.0, "memory_bytes": 2147483648,
     "gpu_model": "NVIDIA A10", "gpu_count": 1, "gpu_memory_bytes": 25769803776, "host": "node-3",
     "used": {"cpu_seconds": 5012.3, "peak_memory_bytes": 1610612736, "gpu_hours": 0.41, "wall_seconds": 7200.2}}

*Given* is what the run could really use, not only what was asked: a cap above what this machine has is
the machine's (36 CPUs asked on a 2-CPU machine are 2 CPUs given), no cap is the whole machine.
``gpu_memory_bytes`` is each GPU's memory (the smallest, when they differ). ``gpu_hours`` is the GPU time
used: nvidia-smi's utilisation of the run's GPUs, sampled every second, integrated over the run and times
their number (a GPU busy half the time for two hours is one GPU-hour); null without GPUs or readings.

``HARDWARE`` names settings a command can ask for at once (``--hardware mlebench``: the paper's 36 vCPUs,
440 GB of memory and one 24 GB A10), and :func:`shortfalls` says what of one this machine cannot give.
"""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.errors import PodiumError
from podium.sandbox._gpu import Gpu, list_gpus
from podium.sandbox._limits import host_memory_bytes
from podium.sandbox._types import ExecResult, Limits, ResourceSample

__all__ = ["HARDWARE", "Hardware", "cpu_model", "gpu_hours", "host_cpus", "run_compute", "shortfalls"]

_CPU_MODEL_KEYS = ("model name", "Model", "cpu model", "Hardware")


@dataclass(frozen=True)
class Hardware:
    """A compute setting a run asks for: CPUs, memory, GPUs (how many, and which model with how much memory)."""

    cpus: float
    memory_bytes: int
    gpus: int
    gpu_model: str | None = None
    gpu_memory_bytes: int | None = None


#: Settings ``--hardware`` names.
HARDWARE = {
    "mlebench": Hardware(cpus=36, memory_bytes=440 << 30, gpus=1, gpu_model="NVIDIA A10", gpu_memory_bytes=24 << 30)
}


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """This machine's CPU model, as ``/proc/cpuinfo`` names it (the architecture where it does not)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                if key.strip() in _CPU_MODEL_KEYS and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def host_cpus() -> int:
    """The CPUs this process may use (its affinity)."""
    return len(os.sched_getaffinity(0))


def run_compute(limits: Limits, result: ExecResult, gpus: list[Gpu] | None = None) -> dict[str, Any]:
    """What a run under ``limits`` that ended as ``result`` had and used (see the module docstring); ``gpus`` are
    this machine's GPUs (default: nvidia-smi's list, read when the run had GPUs)."""
    cpus = float(host_cpus())
    memory = host_memory_bytes()
    if limits.memory_bytes is not None:
        memory = min(limits.memory_bytes, memory) if memory is not None else limits.memory_bytes
    mine = _gpus_of(limits.gpus, gpus)
    cpu_seconds = result.cpu_seconds
    if cpu_seconds is None and result.samples:
        cpu_seconds = result.samples[-1].cpu_seconds
    return {
        "cpu_model": cpu_model(),
        "cpus": min(limits.cpus, cpus) if limits.cpus is not None else cpus,
        "memory_bytes": memory,
        "gpu_model": " + ".join(sorted({g.name for g in mine})) if mine else None,
        "gpu_count": len(limits.gpus),
        "gpu_memory_bytes": min(g.memory_total_bytes for g in mine) if mine else None,
        "host": socket.gethostname(),
        "used": {
            "cpu_seconds": round(cpu_seconds, 3) if cpu_seconds is not None else None,
            "peak_memory_bytes": result.peak_memory_bytes,
            "gpu_hours": gpu_hours(result.samples, len(limits.gpus)) if limits.gpus else None,
            "wall_seconds": round(result.seconds, 3),
        },
    }


def _gpus_of(indices: tuple[int, ...], gpus: list[Gpu] | None) -> list[Gpu]:
    if not indices:
        return []
    if gpus is None:
        try:
            gpus = list_gpus()
        except PodiumError:
            return []
    return [g for g in gpus if g.index in indices]


def gpu_hours(samples: list[ResourceSample], count: int) -> float | None:
    """The GPU time used over ``samples`` by ``count`` GPUs: each interval between readings weighted by the mean
    utilisation read at its end; None when no sample holds a reading."""
    total, last, read = 0.0, 0.0, False
    for sample in sorted(samples, key=lambda s: s.t):
        if sample.gpu_percent is not None:
            total += (sample.t - last) * sample.gpu_percent / 100 * count
            read = True
        last = sample.t
    return round(total / 3600, 6) if read else None


def shortfalls(asked: Hardware, gpus: list[Gpu] | None = None) -> tuple[Hardware, list[str]]:
    """What a run asking for ``asked`` gets on this machine (GPUs only as many as it has), and one sentence for each
    part of ``asked`` it cannot give; ``gpus`` are this machine's (default: nvidia-smi's list)."""
    lines = []
    here = host_cpus()
    if asked.cpus > here:
        lines.append(f"{asked.cpus:g} CPUs asked, but this machine gives podium {here}: each run can use {here}")
    memory = host_memory_bytes()
    if memory is not None and asked.memory_bytes > memory:
        lines.append(
            f"{_gib(asked.memory_bytes)} of memory asked, but this machine has {_gib(memory)}: "
            f"each run can use at most that"
        )
    if gpus is None:
        gpus = list_gpus()
    given = min(asked.gpus, len(gpus))
    wanted = f"{asked.gpus} x {asked.gpu_model or 'GPU'}" + (
        f" ({_gib(asked.gpu_memory_bytes)})" if asked.gpu_memory_bytes else ""
    )
    if given < asked.gpus:
        lines.append(f"{wanted} asked, but this machine has {len(gpus) or 'no'} GPU(s): each run gets {given}")
    other = sorted({f"{g.name} ({_gib(g.memory_total_bytes)})" for g in gpus if g.name != asked.gpu_model})
    if given and asked.gpu_model and other:
        lines.append(f"{wanted} asked, but this machine's GPUs are {', '.join(other)}: runs get those instead")
    return Hardware(asked.cpus, asked.memory_bytes, given, asked.gpu_model, asked.gpu_memory_bytes), lines


def _gib(size: int) -> str:
    return f"{round(size / 2**30, 1):g} GiB"

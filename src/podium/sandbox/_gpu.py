"""NVIDIA GPUs on the host: which exist, their device files, and their use over time (via nvidia-smi).

podium hands GPUs to runs by host index. ``nvidia-smi`` is the one source of truth: it lists the GPUs
(``list_gpus``) and is polled once per resource sample for the GPUs of a run (``GpuMonitor``). The
device files a sandbox must expose for GPU ``i`` are ``/dev/nvidia<minor>`` (the minor number comes
from ``/proc/driver/nvidia/gpus/<bus id>/information``) plus the shared control devices.

Utilisation is per GPU, not per process: a GPU given to one run at a time (podium never gives the
same GPU to two concurrent runs) is attributed to that run.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from podium.errors import PodiumError

NVIDIA_SMI = "nvidia-smi"
#: The driver's folder of one folder per GPU (named by its PCI bus id), which NVML and CUDA enumerate.
DRIVER_ROOT = Path("/proc/driver/nvidia/gpus")
CONTROL_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
_QUERY_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    bus_id: str
    memory_total_bytes: int


@dataclass(frozen=True)
class GpuUsage:
    """One reading of the GPUs of a run: mean utilisation (%) and memory in use summed over them."""

    utilization_percent: float
    memory_used_bytes: int


def _query(fields: str, ids: Sequence[int] | None = None) -> list[list[str]]:
    executable = shutil.which(NVIDIA_SMI)
    if executable is None:
        raise PodiumError(
            "GPUs were asked for but nvidia-smi is not on PATH: this machine has no NVIDIA driver podium can use. "
            "Fix: install the NVIDIA driver (nvidia-smi comes with it), or run with --gpus 0."
        )
    argv = [executable, f"--query-gpu={fields}", "--format=csv,noheader,nounits"]
    if ids:
        argv.append("--id=" + ",".join(str(i) for i in ids))
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_QUERY_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PodiumError(f"nvidia-smi failed: {error}") from None
    if done.returncode != 0:
        raise PodiumError(
            f"nvidia-smi failed (exit code {done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
        )
    return parse_csv(done.stdout)


def parse_csv(text: str) -> list[list[str]]:
    """nvidia-smi's ``--format=csv,noheader,nounits`` output as rows of stripped fields."""
    return [[field.strip() for field in line.split(",")] for line in text.splitlines() if line.strip()]


def _number(text: str) -> float | None:
    """A numeric nvidia-smi field; ``[N/A]`` / ``[Not Supported]`` become None."""
    try:
        return float(text)
    except ValueError:
        return None


def list_gpus(required: bool = False) -> list[Gpu]:
    """Every NVIDIA GPU on this host: empty when there is no driver, or an error saying so if ``required``."""
    if shutil.which(NVIDIA_SMI) is None and not required:
        return []
    gpus = []
    for row in _query("index,name,pci.bus_id,memory.total"):
        total = _number(row[3])
        gpus.append(Gpu(int(row[0]), row[1], row[2], int((total or 0) * 2**20)))
    return gpus


def driver_folder(gpu: Gpu, driver_root: Path = DRIVER_ROOT) -> Path | None:
    """The driver's ``/proc`` folder of GPU ``gpu`` (its ``information``), None where there is none."""
    # The driver names the folder by the PCI bus id in lower case with a 4-digit domain.
    bus = gpu.bus_id.lower()
    candidates = [driver_root / bus, driver_root / bus[4:]] if len(bus) > 12 else [driver_root / bus]
    return next((folder for folder in candidates if (folder / "information").is_file()), None)


def device_files(gpu: Gpu, driver_root: Path = DRIVER_ROOT) -> list[str]:
    """The device files that give a process GPU ``gpu`` (and only it) plus the shared control devices."""
    minor = gpu.index
    folder = driver_folder(gpu, driver_root)
    if folder is not None:
        for line in (folder / "information").read_text().splitlines():
            if line.startswith("Device Minor:"):
                minor = int(line.split(":", 1)[1])
    return [f"/dev/nvidia{minor}", *(d for d in CONTROL_DEVICES if Path(d).exists())]


class GpuMonitor:
    """Polls the use of the given GPUs (host indices) once per call to :meth:`sample`."""

    def __init__(self, indices: Sequence[int]) -> None:
        self.indices = list(indices)

    def sample(self) -> GpuUsage | None:
        """Mean utilisation and summed memory of the GPUs now; None when nvidia-smi cannot be read."""
        if not self.indices:
            return None
        try:
            rows = _query("index,utilization.gpu,memory.used", self.indices)
        except PodiumError:
            return None
        return usage_of(rows, self.indices)


def usage_of(rows: list[list[str]], indices: Sequence[int]) -> GpuUsage | None:
    """Aggregate nvidia-smi rows (index, utilization %, memory MiB) over ``indices``."""
    wanted = set(indices)
    utils, memory = [], 0
    for row in rows:
        if len(row) < 3 or int(row[0]) not in wanted:
            continue
        util, used = _number(row[1]), _number(row[2])
        if util is not None:
            utils.append(util)
        memory += int((used or 0) * 2**20)
    if not utils and not memory:
        return None
    return GpuUsage(round(sum(utils) / len(utils), 1) if utils else 0.0, memory)

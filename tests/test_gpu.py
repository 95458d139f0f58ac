"""GPU handling without a GPU: nvidia-smi's output read correctly, device files, the per-run GPU pool,
and clear errors when GPUs are asked for on a machine that has none.

The nvidia-smi here is a script that prints what the real one prints for these queries (format
``csv,noheader,nounits``); on a machine with NVIDIA GPUs the same code reads the real one.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest

from podium.errors import PodiumError
from podium.run import GpuPool
from podium.sandbox._bwrap import gpu_device_files
from podium.sandbox._gpu import Gpu, GpuMonitor, device_files, list_gpus, parse_csv, usage_of
from podium.sandbox._process import sample_of

# Two H100s as `nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total --format=csv,noheader,nounits` lists them.
LISTING = "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559\n1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559\n"
USAGE = "0, 87, 40213\n1, [N/A], 1024\n"


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An nvidia-smi on PATH answering the listing and the usage query, and logging its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {tmp_path}/calls.txt\n'
        'case "$1" in\n'
        f"  --query-gpu=index,name,*) printf '{LISTING}' ;;\n"
        f"  --query-gpu=index,utilization.gpu,memory.used) printf '{USAGE}' ;;\n"
        "  *) echo unknown query >&2; exit 6 ;;\n"
        "esac\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "calls.txt"


def test_lists_gpus_from_nvidia_smi(fake_smi: Path) -> None:
    gpus = list_gpus()
    assert [g.index for g in gpus] == [0, 1]
    assert gpus[1] == Gpu(1, "NVIDIA H100 80GB HBM3", "00000000:2A:00.0", 81559 * 2**20)


def test_usage_is_averaged_over_the_runs_gpus_and_na_is_skipped(fake_smi: Path) -> None:
    usage = GpuMonitor([0, 1]).sample()
    assert usage is not None and usage.utilization_percent == 87.0
    assert usage.memory_used_bytes == (40213 + 1024) * 2**20
    assert "--id=0,1" in fake_smi.read_text()
    assert usage_of(parse_csv(USAGE), [1]).utilization_percent == 0.0  # only N/A: no utilisation figure
    assert usage_of(parse_csv(USAGE), [5]) is None


def test_resource_samples_carry_gpu_use(fake_smi: Path) -> None:
    sample = sample_of(1.5, (2.0, 100), GpuMonitor([0]))
    assert (sample.gpu_percent, sample.gpu_memory_bytes) == (87.0, 40213 * 2**20)
    assert sample_of(1.5, (2.0, 100), None).gpu_percent is None


def test_device_files_use_the_driver_minor_number(tmp_path: Path) -> None:
    info = tmp_path / "0000:2a:00.0"
    info.mkdir()
    (info / "information").write_text("Model: NVIDIA H100\nDevice Minor: 4\nBus Location: 0000:2a:00.0\n")
    files = device_files(Gpu(1, "H100", "00000000:2A:00.0", 0), driver_root=tmp_path)
    assert files[0] == "/dev/nvidia4"


def test_asking_for_gpus_on_a_machine_without_them_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if list_gpus():
        pytest.skip("this machine has GPUs")
    with pytest.raises(PodiumError, match=r"nvidia-smi is not on PATH.*--gpus 0"):
        gpu_device_files((0,))


def test_bwrap_refuses_a_gpu_index_the_machine_lacks(fake_smi: Path) -> None:
    with pytest.raises(PodiumError, match=r"GPU\(s\) \[7\] asked for, but this machine has 2"):
        gpu_device_files((0, 7))


def test_the_pool_gives_concurrent_runs_disjoint_gpus() -> None:
    pool = GpuPool([0, 1, 2, 3], per_run=2)
    held: list[tuple[int, ...]] = []
    overlaps: list[str] = []
    lock = threading.Lock()

    def run() -> None:
        with pool.take() as mine:
            with lock:
                if any(set(mine) & set(other) for other in held):
                    overlaps.append(f"{mine} vs {held}")
                held.append(mine)
            time.sleep(0.05)
            with lock:
                held.remove(mine)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert overlaps == [] and sorted(pool.free) == [0, 1, 2, 3]


def test_a_run_waiting_for_gpus_gives_up_when_the_batch_is_interrupted() -> None:
    from podium.run import RunInterrupted

    pool = GpuPool([0], per_run=1)
    cancel = threading.Event()
    outcome: list[str] = []

    def waiter() -> None:
        try:
            with pool.take(cancel):
                outcome.append("got a GPU")
        except RunInterrupted:
            outcome.append("interrupted")

    with pool.take():
        thread = threading.Thread(target=waiter)
        thread.start()
        cancel.set()
        thread.join(10)
    assert outcome == ["interrupted"] and pool.free == [0]

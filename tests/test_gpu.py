"""GPU handling without a GPU: nvidia-smi's output read correctly, device files, the per-run GPU pool,
and clear errors when GPUs are asked for on a machine that has none.

The nvidia-smi here is a script that prints what the real one prints for these queries (format
``csv,noheader,nounits``); on a machine with NVIDIA GPUs the same code reads the real one.
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from pathlib import Path

import pytest

from podium.errors import PodiumError
from podium.records import compute_profile
from podium.run import GpuPool
from podium.sandbox import HARDWARE, ExecResult, Limits, ResourceSample, run_compute, shortfalls
from podium.sandbox._bwrap import gpu_device_files, gpu_driver_covers
from podium.sandbox._compute import gpu_hours
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


def test_gpu_hours_integrate_the_sampled_utilisation() -> None:
    samples = [
        ResourceSample(t, cpu_seconds=t, rss_bytes=1, gpu_percent=p) for t, p in ((1800.0, 50.0), (3600.0, 100.0))
    ]
    assert gpu_hours(samples, count=2) == 1.5  # half an hour at 50 % and half an hour at 100 %, on two GPUs
    assert gpu_hours([ResourceSample(1.0, cpu_seconds=1, rss_bytes=1)], count=1) is None  # never read: unknown


def test_a_record_carries_the_compute_given_and_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """I3: what the run could really use (a cap above the machine is the machine), the GPUs it had, what it used."""
    import podium.sandbox._compute as compute

    monkeypatch.setattr(compute, "host_cpus", lambda: 8)
    monkeypatch.setattr(compute, "host_memory_bytes", lambda: 64 << 30)
    gpus = [Gpu(0, "NVIDIA A10", "00000000:18:00.0", 24 << 30), Gpu(1, "NVIDIA A10", "00000000:2A:00.0", 24 << 30)]
    samples = [ResourceSample(3600.0, cpu_seconds=5000.0, rss_bytes=1 << 30, gpu_percent=40.0)]
    result = ExecResult(0, False, None, 3600.5, 3 << 30, samples, cpu_seconds=5012.25)
    record = run_compute(Limits(wall_seconds=7200, cpus=36, memory_bytes=2 << 30, gpus=(1,)), result, gpus)
    assert record["cpus"] == 8 and record["memory_bytes"] == 2 << 30  # 36 CPUs asked of 8: 8 given
    assert (record["gpu_model"], record["gpu_count"], record["gpu_memory_bytes"]) == ("NVIDIA A10", 1, 24 << 30)
    assert record["used"] == {
        "cpu_seconds": 5012.25,
        "peak_memory_bytes": 3 << 30,
        "gpu_hours": 0.4,
        "wall_seconds": 3600.5,
    }
    assert record["cpu_model"] and record["host"]
    bare = run_compute(Limits(wall_seconds=60), ExecResult(0, False, None, 1.0, None), gpus)
    assert (bare["cpus"], bare["memory_bytes"], bare["gpu_model"], bare["gpu_count"]) == (8, 64 << 30, None, 0)
    assert bare["used"]["gpu_hours"] is None and bare["used"]["cpu_seconds"] is None
    assert compute_profile(record) == "8 CPUs, 2 GiB, 1 x NVIDIA A10 (24 GiB)"
    assert compute_profile(bare) == "8 CPUs, 64 GiB, no GPU" and compute_profile(None) is None
    assert compute_profile({**bare, "cpus": 1.0, "memory_bytes": 1536 << 20}) == "1 CPU, 1.5 GiB, no GPU"


def test_hardware_mlebench_says_what_this_machine_cannot_give(monkeypatch: pytest.MonkeyPatch) -> None:
    import podium.sandbox._compute as compute

    monkeypatch.setattr(compute, "host_cpus", lambda: 2)
    monkeypatch.setattr(compute, "host_memory_bytes", lambda: 24 << 30)
    given, missing = shortfalls(HARDWARE["mlebench"], gpus=[])
    assert (given.cpus, given.memory_bytes, given.gpus) == (36, 440 << 30, 0)
    assert missing == [
        "36 CPUs asked, but this machine gives podium 2: each run can use 2",
        "440 GiB of memory asked, but this machine has 24 GiB: each run can use at most that",
        "1 x NVIDIA A10 (24 GiB) asked, but this machine has no GPU(s): each run gets 0",
    ]
    monkeypatch.setattr(compute, "host_cpus", lambda: 64)
    monkeypatch.setattr(compute, "host_memory_bytes", lambda: 512 << 30)
    h100 = Gpu(0, "NVIDIA H100 80GB HBM3", "00000000:18:00.0", 81559 << 20)
    given, missing = shortfalls(HARDWARE["mlebench"], gpus=[h100])
    assert given.gpus == 1 and missing == [
        "1 x NVIDIA A10 (24 GiB) asked, but this machine's GPUs are NVIDIA H100 80GB HBM3 (79.6 GiB): runs get those instead"
    ]
    assert shortfalls(HARDWARE["mlebench"], gpus=[Gpu(0, "NVIDIA A10", "00000000:18:00.0", 24 << 30)])[1] == []


def test_bwrap_leaves_only_the_runs_gpus_in_the_drivers_folder(fake_smi: Path, tmp_path: Path) -> None:
    """NVML and CUDA enumerate /proc/driver/nvidia/gpus: a run sees its GPUs' folders there, no other's."""
    driver = tmp_path / "gpus"
    for bus in ("0000:18:00.0", "0000:2a:00.0"):
        (driver / bus).mkdir(parents=True)
        (driver / bus / "information").write_text(f"Device Minor: {bus[5:7]}\n")
    assert gpu_driver_covers((1,), driver) == [
        "--tmpfs", str(driver), "--ro-bind", str(driver / "0000:2a:00.0"), str(driver / "0000:2a:00.0"),
        "--remount-ro", str(driver),
    ]  # fmt: skip
    assert gpu_driver_covers((), driver) == ["--tmpfs", str(driver), "--remount-ro", str(driver)]
    assert gpu_driver_covers((0,), tmp_path / "no-driver") == []


def test_a_run_sees_its_gpu_and_no_other_on_a_gpu_machine(tmp_path: Path) -> None:
    """On a machine with NVIDIA GPUs (skipped elsewhere): under bwrap nvidia-smi lists the run's GPU only, and a run
    without GPUs has no device file and an empty driver folder."""
    gpus = list_gpus() if shutil.which("nvidia-smi") else []
    if not gpus:
        pytest.skip("no NVIDIA GPU on this machine")
    from podium.sandbox import get_sandbox

    try:
        sandbox = get_sandbox("bwrap")
    except PodiumError as error:
        pytest.skip(f"bubblewrap sandbox unavailable: {error}")
    probe = (
        "import glob, os, subprocess; listed = subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True); "
        "print(listed.stdout.count('GPU '), len(glob.glob('/dev/nvidia[0-9]*')), len(os.listdir('/proc/driver/nvidia/gpus')))"
    )
    for given in ((gpus[-1].index,), ()):
        result = sandbox.run(
            ["python3", "-c", probe], mounts=[], env={}, limits=Limits(wall_seconds=60, gpus=given), workdir="/tmp",
            stdout=tmp_path / "out.txt", stderr=tmp_path / "err.txt",
        )  # fmt: skip
        assert result.exit_code == 0, (tmp_path / "err.txt").read_text()
        assert (tmp_path / "out.txt").read_text().split() == [str(len(given))] * 3
        if given:
            assert result.samples and result.samples[0].gpu_percent is not None

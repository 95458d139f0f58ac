"""The Docker sandbox against a real local engine: its settings, agent images, GPUs, orphans, no pulls.

The escape attempts shared with bwrap (answers, /proc, environment, loopback, writes, fork bomb,
memory, CPU, wall clock, privileges) run against both in ``test_sandbox.py``; these are the parts
only Docker has. The engine is the one ``DOCKER_HOST`` names (``.ci/run`` starts its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from podium.errors import HarnessError, PodiumError
from podium.sandbox import Limits, Mount
from podium.sandbox._docker import HARNESS_LABEL, DockerSandbox, build_agent_image, remove_orphans
from test_sandbox import host_account

MiB = 1 << 20


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("data", "out"):
        (tmp_path / name).mkdir()
    (tmp_path / "data" / "train.csv").write_text("id,y\n1,0\n")
    return tmp_path


def _mounts(work: Path) -> list[Mount]:
    return [Mount(work / "data", "/job/data"), Mount(work / "out", "/job/out", writable=True)]


def _run(sandbox: DockerSandbox, work: Path, command: list[str], limits: Limits | None = None, **kw):
    return sandbox.run(
        command,
        mounts=kw.pop("mounts", _mounts(work)),
        env=kw.pop("env", {}),
        limits=limits or Limits(wall_seconds=30),
        workdir="/job",
        stdout=work / "stdout.txt",
        stderr=work / "stderr.txt",
    )


def test_container_settings_isolate_and_cap(docker_sandbox: DockerSandbox, work: Path) -> None:
    """What the engine was actually told: read back from a created container, not from our own config."""
    limits = Limits(wall_seconds=10, memory_bytes=300 * MiB, pids=64, cpus=0.5, shm_bytes=64 * MiB)
    config = docker_sandbox.create_config(
        ["true"], mounts=_mounts(work), env={"A": "1"}, limits=limits, workdir="/job", user="1000:1000"
    )
    container = docker_sandbox.client.containers.create(**config)
    try:
        host = container.attrs["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
        (profile,) = [json.loads(o.split("=", 1)[1]) for o in host["SecurityOpt"] if o.startswith("seccomp=")]
        denied = {name for rule in profile["syscalls"] for name in rule["names"] if rule["action"] == "SCMP_ACT_ERRNO"}
        assert {"io_uring_setup", "bpf", "keyctl", "socket", "clone3"} <= denied  # podium's policy, not Docker's
        assert host["ReadonlyRootfs"] is True and host["Init"] is True and host["IpcMode"] == "private"
        assert host["Memory"] == 300 * MiB and host["MemorySwap"] == 300 * MiB  # no swap beyond the cap
        assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 64 and host["ShmSize"] == 64 * MiB
        assert not host.get("Privileged") and not host.get("PortBindings")
        mounts = {m["Target"]: m for m in host["Mounts"]}
        assert mounts["/job/data"]["ReadOnly"] is True and not mounts["/job/out"].get("ReadOnly")
        assert all(m["ReadOnly"] for target, m in mounts.items() if not target.startswith("/job/out"))
        assert container.attrs["Config"]["User"] == "1000:1000"
    finally:
        container.remove(force=True)


def test_an_agent_image_sees_its_own_limits_and_its_network_is_observed(
    docker_sandbox: DockerSandbox, busybox_image: str, work: Path
) -> None:
    """An agent's own image (no host Python, busybox only) gets the same view of its limits as the host image: its
    cpuset, a /proc/meminfo of its cap, its CPU alone in /proc/cpuinfo and /proc/stat, the thread variables; its network is observed before its shell starts."""
    sandbox = DockerSandbox.find(busybox_image)
    result = _run(
        sandbox,
        work,
        [
            "sh",
            "-c",
            "echo NPROC $(nproc); grep -E '^(MemTotal|SwapTotal):' /proc/meminfo; echo OMP $OMP_NUM_THREADS; "
            "echo CPUINFO $(grep -c ^processor /proc/cpuinfo) STAT $(grep -c '^cpu[0-9]' /proc/stat)",
        ],
        Limits(wall_seconds=30, cpus=1, memory_bytes=256 * MiB),
    )
    assert result.exit_code == 0, (work / "stderr.txt").read_text()
    seen = (work / "stdout.txt").read_text().split()
    assert seen[:10] == ["NPROC", "1", "MemTotal:", str(256 << 10), "kB", "SwapTotal:", "0", "kB", "OMP", "1"], seen
    assert seen[10:] == ["CPUINFO", "1", "STAT", "1"], seen  # its CPU alone in /proc/cpuinfo and /proc/stat
    assert result.network is not None and [i["name"] for i in result.network["interfaces"]] == ["lo"], result.network
    assert result.cpu_seconds is not None and result.cpu_seconds >= 0


def test_shm_size_as_seen_inside(docker_sandbox: DockerSandbox, work: Path) -> None:
    script = work / "data" / "probe.py"
    script.write_text("import os\ns = os.statvfs('/dev/shm')\nprint('SHM', s.f_blocks * s.f_frsize)\n")
    result = _run(
        docker_sandbox,
        work,
        ["python3", "/job/data/probe.py"],
        Limits(wall_seconds=30, memory_bytes=512 * MiB, shm_bytes=32 * MiB),
    )
    assert result.exit_code == 0, (work / "stderr.txt").read_text()
    assert "SHM 33554432" in (work / "stdout.txt").read_text()


def test_agent_image_runs_without_the_host_and_without_network(
    docker_sandbox: DockerSandbox, busybox_image: str, work: Path
) -> None:
    """A self-contained image: none of the host's system, no network interface but loopback, uid 1000."""
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        port = listener.getsockname()[1]
        sandbox = DockerSandbox.find(busybox_image)
        script = textwrap.dedent(
            f"""
            echo ROOT $(ls /)
            echo IFACES $(ls /sys/class/net 2>/dev/null) $(cat /proc/net/dev | tail -n +3 | cut -d: -f1)
            echo UID $(id -u)
            ls /usr/lib/python3* >/dev/null 2>&1 && echo HOST-PYTHON-VISIBLE
            for host in 127.0.0.1 172.17.0.1 10.0.2.2; do
              nc -w 2 $host {port} </dev/null && echo CONNECTED $host
            done
            nc -w 3 1.1.1.1 80 </dev/null && echo INTERNET  # busybox wget crashes in this static image; nc does not
            cp /job/data/train.csv /job/out/copied.csv && echo COPIED
            """
        )
        result = _run(sandbox, work, ["/bin/sh", "-c", script])
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    out = (work / "stdout.txt").read_text()
    assert result.exit_code == 0, (work / "stderr.txt").read_text()
    assert "CONNECTED" not in out and "INTERNET" not in out and "HOST-PYTHON-VISIBLE" not in out
    assert "IFACES lo" in out.replace("  ", " ")
    assert "COPIED" in out
    uid = int(out.split("UID ")[1].split()[0])
    assert uid == os.getuid() if os.getuid() != 0 else uid != 0 and not host_account(uid)  # no host account's id
    assert (work / "out" / "copied.csv").stat().st_uid == os.getuid()  # handed back to the harness's user


def test_missing_image_is_never_pulled(docker_sandbox: DockerSandbox) -> None:
    with pytest.raises(PodiumError, match="never pulls images"):
        DockerSandbox.find(f"podium-no-such-image-{uuid.uuid4().hex[:8]}:1")


def test_building_on_an_unavailable_base_image_fails_clearly(docker_sandbox: DockerSandbox, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(f"FROM podium-no-such-base-{uuid.uuid4().hex[:8]}:1\nRUN true\n")
    with pytest.raises(PodiumError, match="podium never pulls"):
        build_agent_image(docker_sandbox.client, tmp_path, "podium-test-unbuildable:1")


def test_gpus_are_requested_by_index_and_a_missing_gpu_runtime_is_explained(
    docker_sandbox: DockerSandbox, work: Path
) -> None:
    limits = Limits(wall_seconds=10, gpus=(1, 3))
    config = docker_sandbox.create_config(["true"], mounts=[], env={}, limits=limits, workdir="/job", user="1000:1000")
    container = docker_sandbox.client.containers.create(**config)
    try:
        (request,) = container.attrs["HostConfig"]["DeviceRequests"]
        assert request["DeviceIDs"] == ["1", "3"] and request["Capabilities"] == [["gpu"]]
        assert request["Driver"] == "nvidia"
    finally:
        container.remove(force=True)
    runtimes = docker_sandbox.client.info().get("Runtimes", {})
    if "nvidia" in runtimes:
        pytest.skip("this engine has the NVIDIA runtime; the no-runtime error cannot be provoked")
    with pytest.raises(PodiumError, match="NVIDIA Container Toolkit"):
        _run(docker_sandbox, work, ["true"], limits)
    leftovers = docker_sandbox.client.containers.list(all=True, filters={"label": HARNESS_LABEL})
    assert not [c for c in leftovers if c.labels[HARNESS_LABEL].endswith(f":{os.getpid()}")]


def test_containers_of_a_killed_harness_are_removed(docker_sandbox: DockerSandbox, work: Path) -> None:
    """A podium killed with -9 cannot remove its container: the next sandbox on this host does."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    config = docker_sandbox.create_config(
        ["sleep", "300"], mounts=[], env={}, limits=Limits(wall_seconds=10), workdir="/tmp", user="1000:1000"
    )
    config["labels"] = {HARNESS_LABEL: f"{socket.gethostname()}:{dead.pid}"}
    orphan = docker_sandbox.client.containers.create(**config)
    orphan.start()
    mine = docker_sandbox.client.containers.create(
        **docker_sandbox.create_config(
            ["true"], mounts=[], env={}, limits=Limits(wall_seconds=10), workdir="/tmp", user="1000:1000"
        )
    )
    try:
        removed = remove_orphans(docker_sandbox.client)
        assert mine.id not in removed  # a live harness's container stays
        ids = {c.id for c in docker_sandbox.client.containers.list(all=True)}
        assert orphan.id not in ids and mine.id in ids  # (another podium on this engine may have removed it first)
    finally:
        mine.remove(force=True)


def test_wall_limit_kills_the_container_and_removes_it(docker_sandbox: DockerSandbox, work: Path) -> None:
    started = time.monotonic()
    result = _run(docker_sandbox, work, ["sleep", "300"], Limits(wall_seconds=1.5))
    assert result.timed_out and result.killed_for == "time" and result.exit_code is None
    assert time.monotonic() - started < 20
    ours = [
        c
        for c in docker_sandbox.client.containers.list(all=True, filters={"label": HARNESS_LABEL})
        if c.labels[HARNESS_LABEL].endswith(f":{os.getpid()}")
    ]
    assert ours == []


def test_base_images_of_a_dockerfile() -> None:
    from podium.sandbox._docker_images import base_images

    text = (
        "# comment\nFROM --platform=linux/amd64 python:3.11-slim AS build\nRUN pip wheel .\n"
        "from build AS test\nFROM scratch\nCOPY --from=build /w /w\nFROM \\\n  debian:12\n"
    )
    assert base_images(text) == ["python:3.11-slim", "debian:12"]
    with pytest.raises(PodiumError, match="build argument"):
        base_images("ARG BASE=python:3\nFROM $BASE\n")


def test_parent_groups_of_a_killed_harness_are_swept_in_every_hierarchy(docker_sandbox: DockerSandbox) -> None:
    """runc fills podium/<run> in every cgroup hierarchy; a SIGKILLed harness cannot remove them."""
    from podium.sandbox._cgroup import CGROUP_ROOT

    hierarchies = [h for h in CGROUP_ROOT.iterdir() if (h / "cgroup.procs").is_file() and os.access(h, os.W_OK)]
    if not hierarchies or not docker_sandbox._local_engine():
        pytest.skip("needs writable cgroup v1 hierarchies and a local engine")
    name = f"test-{uuid.uuid4().hex[:8]}"
    made = []
    for hierarchy in hierarchies:
        group = hierarchy / "podium" / name
        with contextlib.suppress(OSError):
            group.mkdir(parents=True)
            os.utime(group, (time.time() - 3600, time.time() - 3600))  # abandoned an hour ago
            made.append(group)
    if not made:
        pytest.skip("cannot create or age cgroups here")
    DockerSandbox.find()
    assert [g for g in made if g.exists()] == []


def _host_processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


@contextlib.contextmanager
def _private_engine() -> Iterator[str]:
    """A second Docker engine with its own socket, data root and containerd, removed with all it left."""
    if shutil.which("dockerd") is None or os.getuid() != 0:
        pytest.skip("needs dockerd and root to start a private engine")
    root = Path(tempfile.mkdtemp(prefix="pd-", dir="/tmp"))  # short: the socket path must stay under 108 bytes
    host = f"unix://{root}/d.sock"
    with open(root / "dockerd.log", "wb") as log:
        engine = subprocess.Popen(
            ["dockerd", "--data-root", f"{root}/data", "--exec-root", f"{root}/exec", "--pidfile", f"{root}/d.pid",
             "--bridge=none", "--iptables=false", "-H", host],
            stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    try:
        import docker

        deadline = time.monotonic() + 60
        while True:
            try:
                docker.DockerClient(base_url=host, timeout=5).ping()
                break
            except Exception:
                if time.monotonic() > deadline or engine.poll() is not None:
                    pytest.fail(f"the private dockerd did not start: {(root / 'dockerd.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield host
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(engine.pid, signal.SIGKILL)
        engine.wait()
        for pid in _host_processes_with(str(root)):  # the shims it left (they name its exec root)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        mounted = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        for point in sorted((m for m in mounted if m.startswith(str(root))), reverse=True):
            subprocess.run(["umount", "-l", point], check=False)
        shutil.rmtree(root, ignore_errors=True)


def test_a_dead_engine_is_a_harness_failure_and_the_run_is_killed_without_it(
    docker_sandbox: DockerSandbox, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dockerd killed mid-run: the container (its shim survives the engine) used to run on past its wall
    limit and the run counted as the agent's. Now its processes are killed through the run's cgroup at
    once and the run ends with a HarnessError."""
    if not docker_sandbox._local_engine():
        pytest.skip("needs a local engine and cgroups")
    with _private_engine() as host:
        monkeypatch.setenv("DOCKER_HOST", host)
        sandbox = DockerSandbox.find()
        token = uuid.uuid4().hex
        outcome: dict[str, object] = {}

        def run() -> None:
            try:
                outcome["result"] = _run(
                    sandbox, work, ["python3", "-c", "import time; time.sleep(300)", token], Limits(wall_seconds=120)
                )
            except Exception as error:
                outcome["error"] = error

        thread = threading.Thread(target=run)
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not [p for p in _host_processes_with(token) if b"python3" in Path(f"/proc/{p}/comm").read_bytes()]:
                assert time.monotonic() < deadline and thread.is_alive(), outcome
                time.sleep(0.1)
            os.kill(int(Path(host.removeprefix("unix://")).with_name("d.pid").read_text()), signal.SIGKILL)
            thread.join(90)
            assert not thread.is_alive(), "the run did not end without its engine"
            left = _host_processes_with(token)
            assert isinstance(outcome.get("error"), HarnessError), outcome
            assert "engine stopped answering" in str(outcome["error"])
            assert "killed through the run's cgroup" in str(outcome["error"])
            assert left == []  # not one process of the run outlived the engine
        finally:
            for pid in _host_processes_with(token):  # whatever happened, leave nothing running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_an_engine_that_dies_while_starting_the_container_is_a_harness_failure(
    docker_sandbox: DockerSandbox, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race CI met: the engine killed while it was still answering the start request. The request fails
    with a connection error (not an API error); that used to escape as the run's own exception. Here the
    engine is killed just before the real start request goes out, so the request meets a dead engine."""
    if not docker_sandbox._local_engine():
        pytest.skip("needs a local engine and cgroups")
    from docker.models.containers import Container

    real_start = Container.start
    with _private_engine() as host:
        monkeypatch.setenv("DOCKER_HOST", host)
        sandbox = DockerSandbox.find()
        token = uuid.uuid4().hex

        def start_on_a_dead_engine(container: Container, **options: Any) -> Any:
            os.kill(int(Path(host.removeprefix("unix://")).with_name("d.pid").read_text()), signal.SIGKILL)
            time.sleep(0.5)
            return real_start(container, **options)

        monkeypatch.setattr(Container, "start", start_on_a_dead_engine)
        try:
            with pytest.raises(HarnessError, match="engine stopped answering") as raised:
                _run(sandbox, work, ["python3", "-c", "import time; time.sleep(300)", token], Limits(wall_seconds=60))
            assert "killed through the run's cgroup" in str(raised.value)
            assert _host_processes_with(token) == []
        finally:
            for pid in _host_processes_with(token):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_a_socket_mount_is_reachable_on_the_containers_loopback(
    docker_sandbox: DockerSandbox, busybox_image: str, work: Path, tmp_path: Path
) -> None:
    """For images without Python (MLE-bench's agents expect localhost:5000): the harness listens inside."""
    import http.server
    import socketserver
    import threading

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from the socket")

        def log_message(self, *args: object) -> None:
            pass

    path = tmp_path / "s.sock"
    server = socketserver.ThreadingUnixStreamServer(str(path), Hello)
    os.chmod(path, 0o666)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        sandbox = DockerSandbox.find(busybox_image)
        mounts = [Mount(work / "data", "/job/data"), Mount(work / "out", "/job/out", writable=True),
                  Mount(path, "/job/s.sock", loopback_port=5000)]  # fmt: skip
        result = sandbox.run(
            ["/bin/sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 127.0.0.1 5000; echo; nc -w 2 127.0.0.1 5001 </dev/null || echo CLOSED"],
            mounts=mounts, env={}, limits=Limits(wall_seconds=60), workdir="/job/out",
            stdout=work / "stdout.txt", stderr=work / "stderr.txt",
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    out = (work / "stdout.txt").read_text()
    assert result.exit_code == 0, (work / "stderr.txt").read_text()
    assert "hello from the socket" in out and "CLOSED" in out

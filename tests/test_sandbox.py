"""Sandboxes: positive behaviour on every implementation, escape attempts against the isolating ones.

Each agent here is a small Python script run inside the sandbox. The escape tests plant something
on the host (a secret file, a secret environment variable, a listening socket on 127.0.0.1) and
check that the script cannot reach it; the limit tests check that caps and the wall clock are
enforced and that no process of a run outlives it.
"""

from __future__ import annotations

import contextlib
import grp
import itertools
import json
import os
import platform
import pwd
import re
import shutil
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from podium.errors import PodiumError
from podium.sandbox import ExecResult, Limits, LocalSandbox, Mount, Sandbox, get_sandbox
from podium.sandbox._cgroup import RunCgroup
from podium.sandbox._python import host_python
from venvs import venv_under

MiB = 1 << 20
REPO = Path(__file__).resolve().parents[1]
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
# the top of the sandbox: system dirs, /etc, /root (Python prefix only), fresh /tmp and /home, the /job mounts
SANDBOX_ROOT_ENTRIES = {
    "bin",
    "dev",
    "etc",
    "home",
    "job",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "proc",
    "root",
    "sbin",
    "tmp",
    "usr",
}


def _cgroup_writable(controller: str) -> bool:
    hierarchy = Path("/sys/fs/cgroup") / controller
    return (hierarchy / "cgroup.procs").is_file() and os.access(hierarchy, os.W_OK)


needs_memory_cgroup = pytest.mark.skipif(
    not _cgroup_writable("memory"), reason="cgroup v1 memory controller not writable here: the memory cap is off"
)
needs_pids_cgroup = pytest.mark.skipif(
    not _cgroup_writable("pids"), reason="cgroup v1 pids controller not writable here: the pids cap is off"
)
needs_cpu_cgroup = pytest.mark.skipif(
    not _cgroup_writable("cpu") or not _cgroup_writable("cpuacct"),
    reason="cgroup v1 cpu/cpuacct controllers not writable here: the cpu cap is off",
)


@pytest.fixture(scope="module")
def bwrap() -> Sandbox:
    try:
        return get_sandbox("bwrap")
    except PodiumError as error:
        pytest.skip(f"bubblewrap sandbox unavailable: {error}")


@pytest.fixture(params=["bwrap", "docker", "local"])
def any_sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "local":
        return LocalSandbox()
    sandbox: Sandbox = request.getfixturevalue("bwrap" if request.param == "bwrap" else "docker_sandbox")
    return sandbox


@pytest.fixture(params=["bwrap", "docker"])
def isolated(request: pytest.FixtureRequest) -> Sandbox:
    """Each isolating sandbox in turn: every escape attempt below is tried against both."""
    sandbox: Sandbox = request.getfixturevalue("bwrap" if request.param == "bwrap" else "docker_sandbox")
    return sandbox


class Job:
    """A run's host side: ``code`` (read-only at /job/code), ``data`` (read-only), ``out`` (writable)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.code, self.data, self.out = root / "code", root / "data", root / "out"
        for path in (self.code, self.data, self.out):
            path.mkdir(parents=True)
        (self.data / "train.csv").write_text("id,y\n1,0\n")

    @property
    def mounts(self) -> list[Mount]:
        return [
            Mount(self.code, "/job/code"),
            Mount(self.data, "/job/data"),
            Mount(self.out, "/job/out", writable=True),
        ]

    def run(
        self,
        sandbox: Sandbox,
        script: str,
        *,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        (self.code / "agent.py").write_text(textwrap.dedent(script))
        return sandbox.run(
            ["python3", "code/agent.py", *args],
            mounts=self.mounts,
            env=dict(env or {}),
            limits=limits or Limits(wall_seconds=20),
            workdir="/job",
            stdout=self.root / "logs" / "stdout.txt",
            stderr=self.root / "logs" / "stderr.txt",
        )

    @property
    def stdout(self) -> str:
        return (self.root / "logs" / "stdout.txt").read_text()

    @property
    def stderr(self) -> str:
        return (self.root / "logs" / "stderr.txt").read_text()


@pytest.fixture
def job(tmp_path: Path) -> Job:
    return Job(tmp_path / "job")


def host_account(uid: int) -> bool:
    """Whether a host user or group holds the id ``uid``."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        with contextlib.suppress(KeyError):
            lookup(uid)
            return True
    return False


def _processes_with(token: str) -> list[int]:
    """Host pids whose command line mentions ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


# --- what every sandbox does -------------------------------------------------------------------------


def test_runs_python_with_mounts_env_exit_code_and_logs(any_sandbox: Sandbox, job: Job) -> None:
    result = job.run(
        any_sandbox,
        """
        import os, sys
        print("train:", open("data/train.csv").read().splitlines()[1])
        open("out/submission.csv", "w").write("id,y\\n1,1\\n")
        print("env:", os.environ["GIVEN"], os.environ["HOME"] != "")
        print("to stderr", file=sys.stderr)
        sys.exit(3)
        """,
        env={"GIVEN": "yes"},
    )
    assert result.exit_code == 3, job.stderr
    assert not result.timed_out and result.killed_for is None
    assert "train: 1,0" in job.stdout and "env: yes True" in job.stdout
    assert "to stderr" in job.stderr
    assert (job.out / "submission.csv").read_text() == "id,y\n1,1\n"
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes > 0


DISK_FILLER = """
import errno, os, sys, time
written = 0
try:
    with open("out/big.bin", "wb") as handle:
        for _ in range(8):
            handle.write(os.urandom(8 << 20))  # 64 MB, well over the 20 MB cap
            handle.flush()
            os.fsync(handle.fileno())
            written += 8 << 20
except OSError as error:
    print("FULL", errno.errorcode[error.errno], written >> 20, flush=True)
os.remove("out/big.bin")
made = 0
try:
    os.mkdir("out/many")
    while made < 20000:  # empty files: no blocks, but an inode each
        open(f"out/many/{made}", "w").close()
        made += 1
except OSError as error:
    print("INODES", errno.errorcode[error.errno], made, flush=True)
print("WROTE", written >> 20, made, flush=True)
time.sleep(float(sys.argv[1]))
print("SURVIVED")
"""


def test_disk_cap_is_a_limit_the_kernel_enforces(isolated: Sandbox, job: Job) -> None:
    """As root with loop devices: writes past the cap fail (ENOSPC), bytes and inodes alike, at once (one
    inode per 64 KiB of the cap, at least 4096)."""
    if os.getuid() != 0 or not os.path.exists("/dev/loop-control") or shutil.which("mkfs.ext4", path=SBIN) is None:
        pytest.skip("the kernel's disk limit needs root, loop devices and mkfs.ext4")
    result = job.run(isolated, DISK_FILLER, args=["0"], limits=Limits(wall_seconds=60, disk_bytes=20 * MiB))
    assert result.exit_code == 0 and result.killed_for is None, (result, job.stderr)
    assert "FULL ENOSPC" in job.stdout and "INODES ENOSPC" in job.stdout, job.stdout
    written, made = (int(x) for x in job.stdout.split("WROTE ")[1].split()[:2])
    assert written <= 20 and made <= 4096, job.stdout
    assert not any("disk" in w for w in result.warnings), result.warnings
    assert len(list((job.out / "many").iterdir())) == made  # what the agent left came out


def test_disk_cap_check_kills_where_the_kernel_cannot_enforce_it(
    any_sandbox: Sandbox, job: Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without root or loop devices the cap is a check every few seconds: the run is killed, with a warning."""
    monkeypatch.setattr("podium.sandbox._disk.loop_problem", lambda: "loop devices switched off by the test")
    result = job.run(any_sandbox, DISK_FILLER, args=["30"], limits=Limits(wall_seconds=25, disk_bytes=20 * MiB))
    assert result.killed_for == "disk" and result.exit_code is None and not result.timed_out, (result, job.stderr)
    assert "SURVIVED" not in job.stdout and result.seconds < 15
    if any_sandbox.isolated:
        assert any("is a check every" in w for w in result.warnings), result.warnings


def test_rejects_malformed_requests(any_sandbox: Sandbox, job: Job) -> None:
    with pytest.raises(PodiumError, match="absolute"):
        any_sandbox.run(
            ["true"],
            mounts=[Mount(job.data, "relative/data")],
            env={},
            limits=Limits(5),
            workdir="/job",
            stdout=job.root / "o",
            stderr=job.root / "e",
        )
    with pytest.raises(PodiumError, match="does not exist"):
        any_sandbox.run(
            ["true"],
            mounts=[Mount(job.root / "missing", "/job/x")],
            env={},
            limits=Limits(5),
            workdir="/job",
            stdout=job.root / "o",
            stderr=job.root / "e",
        )


def test_get_sandbox_names_the_choices_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PodiumError, match="bwrap, docker, local"):
        get_sandbox("docker-ish")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(PodiumError, match=r"No Docker engine answers at unix:///nonexistent/docker.sock .*Fix: start"):
        get_sandbox("docker")
    with pytest.raises(PodiumError, match="only the 'docker' sandbox"):
        get_sandbox("bwrap", image="some-agent:1")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(PodiumError, match="apt-get install bubblewrap"):
        get_sandbox("bwrap")


def test_local_warns_loudly_every_time(job: Job, capfd: pytest.CaptureFixture[str]) -> None:
    local = get_sandbox("local")
    assert local.isolated is False
    for _ in range(2):
        result = job.run(local, "print('hi')")
        assert result.exit_code == 0 and "NO ISOLATION" in result.warnings[0]
    assert capfd.readouterr().err.count("NO ISOLATION") == 2


def test_local_kills_on_wall_limit(job: Job) -> None:
    result = job.run(LocalSandbox(), "import time; time.sleep(30)", limits=Limits(wall_seconds=0.5))
    assert result.timed_out and result.killed_for == "time" and result.exit_code is None
    assert result.seconds < 5


def test_local_memory_cap_is_an_address_space_limit(job: Job) -> None:
    result = job.run(
        LocalSandbox(),
        "try:\n    b = b'x' * (1 << 30)\nexcept MemoryError:\n    print('MemoryError')\n",
        limits=Limits(wall_seconds=20, memory_bytes=300 * MiB),
    )
    assert result.exit_code == 0 and "MemoryError" in job.stdout and result.killed_for is None


# --- bwrap and docker: what the agent can see -------------------------------------------------------------------


def test_isolation_sees_only_the_allowed_filesystem(isolated: Sandbox, job: Job, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    secret = tmp_path / "private" / f"answers-{token}.csv"
    secret.parent.mkdir()
    secret.write_text(f"id,y\n1,{token}\n")
    result = job.run(
        isolated,
        r"""
        import json, os, sys
        secret = sys.argv[1]
        name = os.path.basename(secret)
        tries = [secret, "/proc/1/root" + secret, "/proc/self/root" + secret,
                 f"/proc/{os.getppid()}/root" + secret, f"/proc/{os.getppid()}/cwd/../../{name}"]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            tries += [f"/proc/{pid}/root{secret}", f"/proc/{pid}/cwd{secret}"]
        for path in tries:
            try:
                print("LEAKED via", path, open(path).read())
            except OSError:
                pass
        for path in (sys.argv[2], "/root/.pyenv/shims", "/var", os.path.dirname(secret)):
            if os.path.exists(path):
                print("VISIBLE", path)
        if os.path.exists("/sys") and os.listdir("/sys"):  # absent (bwrap) or an empty tmpfs (docker)
            print("VISIBLE /sys", os.listdir("/sys"))
        skip = {"/proc", "/dev", "/usr", sys.base_prefix, sys.prefix}
        for top, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
            if name in files:
                print("FOUND", os.path.join(top, name))
        print("ROOT", json.dumps(sorted(os.listdir("/"))))
        print("ROOT-HOME", json.dumps(os.listdir("/root") if os.path.isdir("/root") else []))
        print("PIDS", json.dumps(sorted(int(p) for p in os.listdir("/proc") if p.isdigit())))
        """,
        args=[str(secret), str(REPO / "tests")],  # this checkout: only a folder on Python's own path is shown
    )
    assert result.exit_code == 0, job.stderr
    assert token not in job.stdout
    assert "LEAKED" not in job.stdout and "VISIBLE" not in job.stdout and "FOUND" not in job.stdout
    top = json.loads(job.stdout.split("ROOT ")[1].splitlines()[0])
    python_tops = {path.split("/")[1] for path in host_python().shown}  # the parents of Python's own folders and files
    # docker: its own marker, an empty /sys, and /run holding the FIFO the command waits on until it is observed
    allowed = (
        SANDBOX_ROOT_ENTRIES | python_tops | ({".dockerenv", "sys", "run"} if isolated.name == "docker" else set())
    )
    assert set(top) <= allowed
    if sys.base_prefix.startswith("/root/"):
        assert json.loads(job.stdout.split("ROOT-HOME ")[1].splitlines()[0]) == [sys.base_prefix.split("/")[2]]
    pids = json.loads(job.stdout.split("PIDS ")[1].splitlines()[0])
    assert len(pids) == 2 and pids[0] == 1  # its own pid namespace: the sandbox's init (pid 1) and the agent


def test_isolation_hides_the_harness_environment(isolated: Sandbox, job: Job, monkeypatch: pytest.MonkeyPatch) -> None:
    token = uuid.uuid4().hex
    monkeypatch.setenv("PODIUM_SECRET_TOKEN", token)
    result = job.run(
        isolated,
        """
        import os
        print(dict(os.environ))
        for pid in filter(str.isdigit, os.listdir("/proc")):
            for what in ("environ", "cmdline"):
                try:
                    print(pid, what, open(f"/proc/{pid}/{what}", "rb").read())
                except OSError as error:
                    print(pid, what, "unreadable", error)
        """,
        env={"GIVEN": "yes"},
    )
    assert result.exit_code == 0, job.stderr
    assert "'GIVEN': 'yes'" in job.stdout
    assert token not in job.stdout and "PODIUM_SECRET_TOKEN" not in job.stdout


def test_isolation_cannot_reach_the_host_loopback(isolated: Sandbox, job: Job) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        result = job.run(
            isolated,
            """
            import socket, sys
            try:
                socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
                print("CONNECTED")
            except OSError as error:
                print("refused:", type(error).__name__)
            print("interfaces:", [line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:]])
            """,
            args=[str(port)],
        )
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever arrived on the host side
    assert result.exit_code == 0, job.stderr
    assert "CONNECTED" not in job.stdout and "refused:" in job.stdout
    assert "interfaces: ['lo']" in job.stdout


def test_isolation_cannot_write_outside_its_writable_mounts(isolated: Sandbox, job: Job) -> None:
    token = uuid.uuid4().hex
    result = job.run(
        isolated,
        """
        import ctypes, os, sys
        token = sys.argv[1]
        targets = ["/job/data/train.csv", f"/job/data/{token}", f"/job/code/{token}", f"/usr/{token}", f"/{token}",
                   f"/etc/{token}", f"{sys.prefix}/{token}", f"/root/{token}", f"/proc/sys/kernel/{token}"]
        for path in targets:
            try:
                with open(path, "a") as handle:
                    handle.write("x")
                print("WROTE", path)
            except OSError:
                pass
        for attempt in (lambda: os.remove("/job/data/train.csv"), lambda: os.chmod("/job/data/train.csv", 0o777)):
            try:
                attempt()
                print("CHANGED data")
            except OSError:
                pass
        libc = ctypes.CDLL(None, use_errno=True)
        MS_REMOUNT, MS_BIND = 32, 4096
        if libc.mount(None, b"/job/data", None, MS_REMOUNT | MS_BIND, None) == 0:
            print("REMOUNTED read-write")
        if libc.mount(b"none", b"/mnt", b"tmpfs", 0, None) == 0 or libc.unshare(0x00020000) == 0:
            print("MOUNT ALLOWED")
        open("/job/out/ok", "w").write("ok")
        open("/tmp/ok", "w").write("ok")
        print("DONE")
        """,
        args=[token],
    )
    assert result.exit_code == 0, job.stderr
    assert "DONE" in job.stdout
    for marker in ("CHANGED", "REMOUNTED", "MOUNT ALLOWED"):
        assert marker not in job.stdout
    # A write is a breach only if it reached the host. Inside, /tmp is the sandbox's own fresh tmpfs: an interpreter
    # installed under /tmp (a venv there) has its prefix on that tmpfs, where a write lands and vanishes with the run.
    wrote = [line.split(" ", 1)[1] for line in job.stdout.splitlines() if line.startswith("WROTE ")]
    assert all(path.startswith("/tmp/") and not Path(path).exists() for path in wrote), wrote
    assert (job.data / "train.csv").read_text() == "id,y\n1,0\n"
    assert sorted(p.name for p in job.data.iterdir()) == ["train.csv"]
    assert not any(Path(p, token).exists() for p in ("/usr", "/", "/etc", sys.prefix, "/root"))
    assert (job.out / "ok").read_text() == "ok"


def test_isolation_refuses_dangerous_system_calls(isolated: Sandbox, job: Job) -> None:
    """Kernel attack surface an agent never needs, refused by one policy in both (podium's filter for bwrap,
    the same deny list as podium's profile for docker): io_uring and AF_VSOCK sockets included."""
    if platform.machine() != "x86_64":
        pytest.skip("the probe below uses x86_64 system call numbers")
    result = job.run(
        isolated,
        r"""
        import ctypes, json, subprocess, sys
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        def call(nr, *args):
            ctypes.set_errno(0)
            rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
            return "ok" if rc >= 0 else {1: "EPERM", 38: "ENOSYS"}.get(ctypes.get_errno(), f"errno {ctypes.get_errno()}")
        x32 = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL(None).syscall(0x40000000 + 39)"])
        print(json.dumps({
            "keyctl": call(250, 0, -3, 0),                 # KEYCTL_GET_KEYRING_ID of the session keyring
            "unshare_user": call(272, 0x10000000),          # a nested user namespace
            "userfaultfd": call(323, 1),                    # UFFD_USER_MODE_ONLY: allowed unprivileged
            "perf_event_open": call(298, 0, 0, -1, -1, 0),
            "io_uring_setup": call(425, 1, 0),
            "vsock": call(41, 40, 1, 0),                    # socket(AF_VSOCK, SOCK_STREAM, 0)
            "name_to_handle_at": call(303, -100, 0, 0, 0, 0),
            "clone3": call(435, 0, 0),
            "x32_getpid": x32.returncode,                   # another ABI: the caller is killed (SIGSYS)
            "unix_socket": call(41, 1, 1, 0),               # socket(AF_UNIX, ...) still works
            "subprocess": subprocess.run(["python3", "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip(),
        }))
        """,
    )
    assert result.exit_code == 0, job.stderr
    seen = json.loads(job.stdout.strip().splitlines()[-1])
    assert seen.pop("subprocess") == "42" and seen.pop("unix_socket") == "ok"  # ordinary things still work
    for name in ("keyctl", "unshare_user", "userfaultfd", "perf_event_open", "io_uring_setup", "vsock"):
        assert seen[name] == "EPERM", (name, seen)
    assert seen["name_to_handle_at"] == "EPERM" and seen["clone3"] == "ENOSYS", seen
    assert seen["x32_getpid"] == -31, seen


def test_bwrap_options_bind_gpus_and_python_after_the_fresh_folders(tmp_path: Path) -> None:
    """Order matters to bwrap: GPU device files after the fresh /dev, the Python installation after the fresh
    /home and /tmp (an installation under /home/<user> stays visible), /proc covered right after /proc."""
    from podium.sandbox._bwrap import BwrapSandbox
    from podium.sandbox._stage import Staged

    staged = Staged(
        mounts=[Mount(tmp_path, "/job/data")],
        etc_dir=tmp_path,
        prefixes=[("/stage/py/0", "/home/someone/venv")],
        uid=2_000_000_001,
        gid=2_000_000_001,
    )
    options = BwrapSandbox("bwrap").options(staged=staged, env={}, workdir="/job", devices=["/dev/nvidia0"])
    pairs = list(itertools.pairwise(options))
    at = {pair: i for i, pair in enumerate(pairs)}
    assert at[("--dev", "/dev")] < at[("--dev-bind", "/dev/nvidia0")]
    assert at[("--tmpfs", "/home")] < at[("--ro-bind", "/stage/py/0")]
    assert at[("--proc", "/proc")] < at[("--ro-bind", "/proc/sys")] < at[("--dev", "/dev")]
    assert ("--uid", "2000000001") in at and ("--ro-bind", str(tmp_path)) in at


def test_seccomp_program_shape() -> None:
    from podium.sandbox import _seccomp

    for machine in ("x86_64", "aarch64"):
        code = _seccomp.program(machine)
        assert len(code) % 8 == 0 and 40 < len(code) // 8 < 256  # struct sock_filter entries, short jumps
    with pytest.raises(ValueError, match="no seccomp table"):
        _seccomp.program("riscv64")


# --- bwrap and docker: limits -----------------------------------------------------------------------------------


@needs_pids_cgroup
def test_isolation_contains_a_fork_bomb(isolated: Sandbox, job: Job) -> None:
    token = uuid.uuid4().hex
    result = job.run(
        isolated,
        """
        import os, time
        forked = 0
        try:
            while forked < 500:  # bounded even if the cap failed
                if os.fork() == 0:
                    time.sleep(30)
                    os._exit(0)
                forked += 1
        except OSError as error:
            print("fork failed", error.errno)
        print("forked", forked)
        """,
        args=[token],
        limits=Limits(wall_seconds=20, pids=40),
    )
    assert result.exit_code == 0, job.stderr
    assert "fork failed" in job.stdout
    assert int(job.stdout.split("forked ")[1]) < 40
    assert result.seconds < 15
    assert _processes_with(token) == []  # the sleeping children died with the run
    assert subprocess.run(["true"], check=False).returncode == 0  # the host can still fork


LIMITS_PROBE = """
import json, multiprocessing, os, subprocess, time
import joblib
from sklearn.utils.parallel import Parallel, delayed

def pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()

# as many tasks as the machine has CPUs and more, each long enough that every worker the pool starts takes one
pids = Parallel(n_jobs=-1)(delayed(pid_after)(0.3) for _ in range(2 * os.cpu_count() + 2))
meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo").read().splitlines())
print(json.dumps({
    "nproc": int(subprocess.run(["nproc"], capture_output=True, text=True).stdout),
    "affinity": len(os.sched_getaffinity(0)),
    "joblib": joblib.cpu_count(),
    "cpu_count": os.cpu_count(),
    "multiprocessing": multiprocessing.cpu_count(),
    "workers": len(set(pids)),
    "mem_total_kib": int(meminfo["MemTotal"].split()[0]),
    "mem_available_kib": int(meminfo["MemAvailable"].split()[0]),
    "swap_kib": int(meminfo["SwapTotal"].split()[0]),
    "threads": {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
}))
"""


def test_the_agent_sees_its_own_cpus_memory_and_threads(any_sandbox: Sandbox, job: Job) -> None:
    """Issue 30 §4: capped at 1 CPU (2 where the machine has more than 2) and 2 GiB, the agent saw the host's CPUs and
    memory, so scikit-learn's n_jobs=-1 started a worker per host CPU, throttled onto its share. Now nproc, its
    affinity and joblib agree on the cap, n_jobs=-1 starts that many workers, os.cpu_count() and /proc/meminfo say
    the cap (bwrap and docker; local keeps the host's), the BLAS thread variables follow the cap unless the run's env sets them."""
    cap = 1 if len(os.sched_getaffinity(0)) <= 2 else 2
    result = job.run(
        any_sandbox,
        LIMITS_PROBE,
        env={"MKL_NUM_THREADS": "3"},  # as an agent.yaml's env: it wins
        limits=Limits(wall_seconds=120, cpus=cap, memory_bytes=2 << 30),
    )
    assert result.exit_code == 0, job.stderr[-3000:]
    seen = json.loads(job.stdout.splitlines()[-1])
    assert seen["nproc"] == seen["affinity"] == seen["joblib"] == seen["workers"] == cap, seen
    assert seen["threads"] == {"OMP_NUM_THREADS": str(cap), "MKL_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": str(cap)}
    if any_sandbox.isolated:  # glibc's count of online CPUs, which ignores the affinity, too
        assert seen["cpu_count"] == seen["multiprocessing"] == cap, seen
        assert seen["mem_total_kib"] == 2 << 20 and 0 < seen["mem_available_kib"] <= 2 << 20, seen
        assert seen["swap_kib"] == 0


HOST_VIEW_PROBE = """
import re, subprocess, time
def available():
    return int(re.search(r"MemAvailable:\\s+(\\d+)", open("/proc/meminfo").read()).group(1))
before = available()
held = bytearray(400 << 20)
for i in range(0, len(held), 4096):  # touched, so charged to the run
    held[i] = 1
time.sleep(3.5)  # the harness refreshes meminfo with each one-second sample
stat = [line.split()[0] for line in open("/proc/stat") if line.startswith("cpu")]
print("NPROC_ALL", subprocess.run(["nproc", "--all"], capture_output=True, text=True).stdout.strip())
print("CPUINFO", sorted(int(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("processor")))
print("STAT", stat)
print("MEM", before, available())
"""


def test_the_agent_sees_only_its_cpus_in_proc_and_its_free_memory_live(isolated: Sandbox, job: Job) -> None:
    """Issue 35 §6: with a CPU cap, nproc --all (glibc reads /sys/devices/system/cpu/possible), /proc/cpuinfo and
    /proc/stat showed the host's CPUs; /proc/meminfo's MemAvailable was fixed at the start. Now they show the run's
    CPUs only, renumbered from 0, and MemAvailable falls as the run's memory use grows (bwrap and docker)."""
    result = job.run(isolated, HOST_VIEW_PROBE, limits=Limits(wall_seconds=120, cpus=1, memory_bytes=1 << 30))
    assert result.exit_code == 0, job.stderr[-3000:]
    seen = dict(line.split(" ", 1) for line in job.stdout.splitlines() if line[:1].isupper())
    assert seen["NPROC_ALL"] == "1", seen
    assert seen["CPUINFO"] == "[0]", seen
    assert seen["STAT"] == "['cpu', 'cpu0']", seen
    before, after = (int(n) for n in seen["MEM"].split())
    assert before <= 1 << 20 and before - after >= 300 << 10, seen  # KiB: 400 MiB held, most of it seen


def test_generated_cpuinfo_and_stat_keep_only_the_runs_cpus() -> None:
    from podium.sandbox._procfs import run_cpuinfo, run_stat

    block = "processor\t: {}\nmodel name\t: X\nsiblings\t: 4\ncpu cores\t: 4\n"
    host = "\n".join(block.format(i) for i in range(4)) + "\n"
    assert run_cpuinfo((1, 3), host) == "\n".join(block.format(i).replace(": 4", ": 2") for i in range(2)) + "\n"
    stat = "cpu  10 0 10\ncpu0 1 0 1\ncpu1 2 0 2\ncpu2 3 0 3\ncpu3 4 0 4\nintr 99 1 2\n\nctxt 7\nbtime 5\n"
    rows = [line.split() for line in run_stat((1, 3), stat).splitlines()]
    assert rows[:3] == [["cpu", "6", "0", "6"], ["cpu0", "2", "0", "2"], ["cpu1", "4", "0", "4"]], rows
    assert ["intr", "99"] in rows and ["ctxt", "7"] in rows and ["btime", "5"] in rows
    busier = stat.replace("cpu1 2 0 2", "cpu1 123456789 0 2")
    assert len(run_stat((1, 3), busier)) == len(run_stat((1, 3), stat))  # rewritten in place: the size never changes


def test_refreshed_meminfo_follows_the_runs_use_at_one_size(tmp_path: Path) -> None:
    from podium.sandbox._limits import write_meminfo
    from podium.sandbox._procfs import ProcView

    limits = Limits(wall_seconds=1, memory_bytes=1 << 30)
    view = ProcView(tmp_path, (0,), limits.memory_bytes, write_meminfo(tmp_path, limits))
    first = (tmp_path / "meminfo").read_text()
    view.refresh(600 << 20)
    after = (tmp_path / "meminfo").read_text()
    available = int(next(line.split()[1] for line in after.splitlines() if line.startswith("MemAvailable")))
    assert len(after) == len(first) and available <= (1 << 20) - (600 << 10), after
    assert {inside for _, inside in view.proc_binds()} == {"/proc/cpuinfo", "/proc/stat", "/proc/meminfo"}


def test_cpu_shares_spread_concurrent_runs_over_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    from podium.sandbox._limits import cpu_share

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    with cpu_share(Limits(wall_seconds=1, cpus=1.5)) as first, cpu_share(Limits(wall_seconds=1, cpus=2)) as second:
        assert first == (0, 1) and second == (2, 3)  # the least held CPUs first
        with cpu_share(Limits(wall_seconds=1, cpus=0.5)) as third, cpu_share(Limits(wall_seconds=1)) as uncapped:
            assert third == (0,) and uncapped is None
    with cpu_share(Limits(wall_seconds=1, cpus=64)) as everything:
        assert everything == (0, 1, 2, 3)  # more than the machine has: all of it


def test_meminfo_shows_the_cap_in_the_hosts_layout() -> None:
    from podium.sandbox._limits import meminfo

    host = "MemTotal:       24683568 kB\nMemFree:         1000000 kB\nMemAvailable:   21775112 kB\n" \
        "Cached:          3000000 kB\nSwapTotal:       8000000 kB\nHugePages_Total:       0\nHugepagesize:       2048 kB\n"  # fmt: skip
    lines = dict(line.split(":") for line in meminfo(2 << 30, host).splitlines())
    assert {k: v.split()[0] for k, v in lines.items()} == {
        "MemTotal": "2097152", "MemFree": "2097152", "MemAvailable": "2097152", "Cached": "0", "SwapTotal": "0",
        "HugePages_Total": "0", "Hugepagesize": "2048",
    }  # fmt: skip
    tight = dict(line.split(":") for line in meminfo(64 << 30, host).splitlines())
    assert tight["MemTotal"].split()[0] == "24683568" and tight["MemAvailable"].split()[0] == "21775112"


def test_the_network_is_observed_inside_the_agents_namespace_before_it_starts(any_sandbox: Sandbox, job: Job) -> None:
    """I2: what the agent's network was, taken in its own namespace before its command ran (an agent that exits at
    once still has it); loopback only in bwrap and docker, the host's own under local."""
    from podium.sandbox._network import observe_network

    result = any_sandbox.run(
        ["true"], mounts=job.mounts, env={}, limits=Limits(wall_seconds=30), workdir="/job",
        stdout=job.root / "out.txt", stderr=job.root / "err.txt",
    )  # fmt: skip
    assert result.exit_code == 0 and result.network is not None, (job.root / "err.txt").read_text()
    network = result.network
    assert network["observed_by"] == "sandbox" and network["at"] == "start", network
    if any_sandbox.isolated:
        (lo,) = network["interfaces"]
        assert lo["name"] == "lo" and lo["up"] and lo["loopback"] and "127.0.0.1/8" in lo["addresses"], network
        assert all(" dev lo" in route for route in network["routes"]), network
    else:
        host = observe_network()
        assert network["interfaces"] == host["interfaces"] and network["routes"] == host["routes"]
        names = {line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]}
        assert {i["name"] for i in host["interfaces"]} == names


@needs_memory_cgroup
def test_isolation_kills_for_memory(isolated: Sandbox, job: Job) -> None:
    result = job.run(
        isolated,
        """
        chunks = []
        for i in range(20):
            chunks.append(b"x" * (50 << 20))  # touches every page: 1 GB in 50 MB steps
            print("allocated", (i + 1) * 50, "MB", flush=True)
        print("SURVIVED")
        """,
        limits=Limits(wall_seconds=30, memory_bytes=200 * MiB),
    )
    assert result.killed_for == "memory", (result, job.stderr)
    assert not result.timed_out and result.exit_code != 0
    assert "SURVIVED" not in job.stdout
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes <= 200 * MiB
    assert result.warnings == []


@needs_cpu_cgroup
def test_isolation_caps_cpu(isolated: Sandbox, job: Job) -> None:
    result = job.run(isolated, "while True: pass", limits=Limits(wall_seconds=1.5, cpus=0.25))
    assert result.killed_for == "time"
    assert result.samples and result.samples[0].cpu_seconds < 0.45  # a quarter of a core, not a whole one


def test_isolation_kills_the_whole_tree_at_the_wall_limit(isolated: Sandbox, job: Job) -> None:
    token = uuid.uuid4().hex
    wall, grandchild_delay = 2.5, 4.0
    started = time.monotonic()
    result = job.run(
        isolated,
        f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:  # detached grandchild: would write the marker after the wall limit
                time.sleep({grandchild_delay})
                open("out/marker", "w").write("outlived the run")
            os._exit(0)
        end = time.monotonic() + 60
        while time.monotonic() < end:  # busy, so the samples show CPU time
            pass
        """,
        args=[token],
        limits=Limits(wall_seconds=wall),
    )
    assert result.timed_out and result.killed_for == "time" and result.exit_code is None
    assert wall <= result.seconds < wall + 3
    assert _processes_with(token) == []
    # some CPU time (a loaded machine gives the busy loop a fraction of the wall time, after the container's start)
    assert result.samples and result.samples[-1].cpu_seconds > 0.05 and result.samples[-1].rss_bytes > 0
    time.sleep(max(0.0, started + grandchild_delay + 0.5 - time.monotonic()))
    assert not (job.out / "marker").exists()


def test_bwrap_leaves_nothing_behind_after_a_normal_exit(
    bwrap: Sandbox, job: Job, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = uuid.uuid4().hex
    groups: list[RunCgroup] = []
    create = RunCgroup.create

    def remember(run_id: str, limits: Limits) -> RunCgroup:
        groups.append(create(run_id, limits))
        return groups[-1]

    monkeypatch.setattr(RunCgroup, "create", remember)
    result = job.run(
        bwrap,
        """
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(30)
            os._exit(0)
        time.sleep(0.2)
        """,
        args=[token],
    )
    assert result.exit_code == 0 and not result.timed_out, job.stderr
    assert _processes_with(token) == []
    assert not any(path.exists() for group in groups for path in group.dirs.values())  # the cgroups were removed


def test_bwrap_without_cgroups_still_isolates_and_times_out(
    bwrap: Sandbox, job: Job, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("podium.sandbox._cgroup.CGROUP_ROOT", tmp_path / "no-cgroups")
    token = uuid.uuid4().hex
    result = job.run(
        bwrap,
        "import os, time\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(30)\n",
        args=[token],
        limits=Limits(wall_seconds=1, memory_bytes=100 * MiB, pids=50),
    )
    assert result.killed_for == "time"
    assert _processes_with(token) == []
    assert any("memory_bytes" in w for w in result.warnings) and any("pids" in w for w in result.warnings)


def test_isolation_runs_as_an_unprivileged_user(isolated: Sandbox, job: Job, tmp_path: Path) -> None:
    """The agent is never host root nor a host account: as root, bwrap used to map it to host uid 0, which
    may write /proc/sys (kernel.core_pattern: code run as root on the host). Its id is read from the host."""
    token = uuid.uuid4().hex
    seen: dict[str, str] = {}

    def host_view() -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not seen:
            for pid in _processes_with(token):
                with contextlib.suppress(OSError):
                    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
                    if "python" in fields["Name"]:
                        seen.update(uid=fields["Uid"].split()[0], gid=fields["Gid"].split()[0])
            time.sleep(0.05)

    watcher = threading.Thread(target=host_view)
    watcher.start()
    result = job.run(
        isolated,
        """
        import os, time
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
        print(os.getuid(), status["CapEff"].strip(), status["NoNewPrivs"].strip(), flush=True)
        time.sleep(3)  # long enough for the host to look at it
        """,
        args=[token],
    )
    watcher.join()
    assert seen, "the agent's process was not found on the host"
    inside, caps, no_new_privs = job.stdout.split()
    assert (caps, no_new_privs) == ("0000000000000000", "1") and result.exit_code == 0, job.stderr
    host_uid, host_gid = int(seen["uid"]), int(seen["gid"])
    assert int(inside) == host_uid  # what the agent sees is what it is
    if os.getuid() == 0:
        assert host_uid != 0 and host_gid != 0
        assert not host_account(host_uid) and not host_account(host_gid), (host_uid, host_gid)
    else:
        assert (host_uid, host_gid) == (os.getuid(), os.getgid())


def test_isolation_keeps_kernel_settings_read_only(isolated: Sandbox, job: Job) -> None:
    """The core_pattern attack: host-wide /proc files must refuse a writer. The probe only opens them for
    writing (never writes), so it cannot harm a host where the check would fail."""
    result = job.run(
        isolated,
        """
        import json, os
        opened, readable = [], []
        for name in ("sys/kernel/core_pattern", "sys/kernel/modprobe", "sys/vm/drop_caches", "sysrq-trigger",
                     "sys/kernel/hostname"):
            try:
                os.close(os.open("/proc/" + name, os.O_WRONLY))
                opened.append(name)
            except OSError:
                pass
        for name in ("kcore", "keys", "timer_list", "sched_debug"):
            try:
                with open("/proc/" + name, "rb") as handle:
                    if handle.read(1):
                        readable.append(name)
            except OSError:
                pass
        print(json.dumps({"opened": opened, "readable": readable}))
        """,
    )
    assert result.exit_code == 0, job.stderr
    seen = json.loads(job.stdout.strip().splitlines()[-1])
    assert seen == {"opened": [], "readable": []}, seen


def test_what_leaves_a_sandbox_is_plain_files_owned_by_the_harness(any_sandbox: Sandbox, job: Job) -> None:
    """A setuid copy, a setgid folder, a FIFO, a socket, an unreadable folder and a link to a host secret:
    on the host only plain files, folders and links remain, the harness's, with no setuid/setgid bits."""
    result = job.run(
        any_sandbox,
        """
        import os, shutil, socket, sys
        out = "out"
        shutil.copy(sys.executable, f"{out}/python-suid")
        os.chmod(f"{out}/python-suid", 0o6755)
        os.mkdir(f"{out}/setgid-dir")
        os.chmod(f"{out}/setgid-dir", 0o2777)
        os.mkfifo(f"{out}/fifo")
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(f"{out}/setgid-dir/sock")
        os.makedirs(f"{out}/locked/deeper")
        open(f"{out}/locked/deeper/file", "w").write("kept")
        os.chmod(f"{out}/locked/deeper", 0)
        os.chmod(f"{out}/locked", 0)
        os.symlink("/etc/shadow", f"{out}/shadow-link")
        print("DONE")
        """,
    )
    assert result.exit_code == 0 and "DONE" in job.stdout, job.stderr
    found = {}
    for top, dirs, files in os.walk(job.out):
        for name in dirs + files:
            path = Path(top, name)
            info = path.lstat()
            found[str(path.relative_to(job.out))] = info
            assert (info.st_uid, info.st_gid) == (os.getuid(), os.getgid()), (path, info.st_uid, info.st_gid)
            assert not info.st_mode & (stat.S_ISUID | stat.S_ISGID), (path, oct(info.st_mode))
            assert stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode), path
    assert "fifo" not in found and "setgid-dir/sock" not in found
    assert stat.S_ISREG(found["python-suid"].st_mode) and (job.out / "locked/deeper/file").read_text() == "kept"
    assert os.readlink(job.out / "shadow-link") == "/etc/shadow"  # kept as a link, never followed


def test_mount_sources_and_bwrap_arguments_name_no_host_path(isolated: Sandbox, job: Job) -> None:
    """mountinfo and every command line inside show no path of the run's folders or of the checkout."""
    if os.getuid() != 0:
        pytest.skip("without root podium cannot stage mounts: mountinfo shows their host paths")
    result = job.run(
        isolated,
        r"""
        import os
        print(open("/proc/self/mountinfo").read())
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                print(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode())
            except OSError:
                pass
        """,
    )
    assert result.exit_code == 0, job.stderr
    assert "/job/data" in job.stdout and "/job/out" in job.stdout
    shown = job.stdout
    for folder in host_python().shown:  # the host's Python shows at its own paths (an editable checkout's src too)
        shown = re.sub(rf"(?<=\s){re.escape(folder)}(?=\s)", "PYTHON-FOLDER", shown)
    for secret in (str(job.root), str(job.root.parent), str(REPO), "/run/podium-sandbox"):
        assert secret not in shown, (secret, shown)


def test_a_killed_harness_leaves_a_stage_that_the_next_run_removes(isolated: Sandbox, tmp_path: Path) -> None:
    """kill -9 of podium mid-run: its stage (mounts, the run's filesystem, its loop device) is unmounted,
    detached and removed by the next run."""
    from podium.sandbox._disk import loop_problem
    from podium.sandbox._stage import STAGE_ROOT

    if os.getuid() != 0 or loop_problem() is not None:
        pytest.skip("stages and per-run filesystems need root and loop devices")
    token = uuid.uuid4().hex
    job = Job(tmp_path / "killed")
    (job.code / "agent.py").write_text("import time\nopen('out/started', 'w').close()\ntime.sleep(120)\n")
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from podium.sandbox import Limits, Mount, get_sandbox
        root = Path({str(job.root)!r})
        get_sandbox({isolated.name!r}).run(
            ["python3", "code/agent.py", {token!r}],
            mounts=[Mount(root / "code", "/job/code"), Mount(root / "out", "/job/out", writable=True)],
            env={{}}, limits=Limits(wall_seconds=100, disk_bytes=64 << 20), workdir="/job",
            stdout=root / "stdout.txt", stderr=root / "stderr.txt",
        )
        """
    )
    harness = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO / "src")})

    def stages() -> list[Path]:
        found = []
        for stage in STAGE_ROOT.iterdir() if STAGE_ROOT.is_dir() else []:
            with contextlib.suppress(OSError):
                if (stage / "owner").read_text().split()[0] == str(harness.pid):
                    found.append(stage)
        return found

    deadline = time.monotonic() + 120
    while not (
        stages() and [p for p in _processes_with(token) if Path(f"/proc/{p}/comm").read_text().strip() == "python3"]
    ):
        assert time.monotonic() < deadline and harness.poll() is None, "the run did not start"
        time.sleep(0.1)
    (stage,) = stages()
    harness.kill()
    harness.wait()
    assert any(point.startswith(str(stage)) for point in _mount_points())  # left behind
    if isolated.name == "docker":  # the next podium removes the dead harness's container first
        from podium.sandbox._docker import DockerSandbox

        DockerSandbox.find()
    job.run(isolated, "print('next run')")
    assert "next run" in job.stdout
    assert not stage.exists() and not any(point.startswith(str(stage)) for point in _mount_points())
    deadline = time.monotonic() + 30
    while _loops_backed_under(job.root) and time.monotonic() < deadline:  # detached once its last user is gone
        time.sleep(0.2)
    assert _loops_backed_under(job.root) == [] and _processes_with(token) == []


def _mount_points() -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def _loops_backed_under(folder: Path) -> list[str]:
    """Loop devices whose backing file lies (or lay, before it was unlinked) below ``folder``."""
    found = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if backing.read_text().startswith(str(folder) + "/"):
                found.append(backing.parent.parent.name)
    return found


@pytest.mark.parametrize("base", ["/home", "/tmp"])
def test_an_interpreter_installed_under_home_or_tmp_works_inside(isolated: Sandbox, base: str, tmp_path: Path) -> None:
    """podium installed in a venv under /home/<user> or /tmp: the sandbox's fresh /home and /tmp used to cover
    the installation, and every agent died with ModuleNotFoundError."""
    with venv_under(base) as venv:
        script = textwrap.dedent(
            f"""
            from pathlib import Path
            from podium.sandbox import Limits, get_sandbox
            result = get_sandbox({isolated.name!r}).run(
                ["python3", "-c", "import sys, numpy; print('PREFIX', sys.prefix, numpy.__name__)"],
                mounts=[], env={{}}, limits=Limits(wall_seconds=60), workdir="/tmp",
                stdout=Path({str(tmp_path / "out.txt")!r}), stderr=Path({str(tmp_path / "err.txt")!r}),
            )
            print("EXIT", result.exit_code)
            """
        )
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", script], capture_output=True, text=True, env=env, timeout=300
        )
        assert "EXIT 0" in done.stdout, (done.stdout, done.stderr[-3000:], (tmp_path / "err.txt").read_text())
        assert (tmp_path / "out.txt").read_text().split() == ["PREFIX", str(venv), "numpy"]


def test_sample_log_stays_bounded_and_evenly_spaced() -> None:
    from podium.sandbox._types import ResourceSample, SampleLog

    log = SampleLog(limit=100)
    for t in range(24 * 3600):  # a day of one-second samples
        log.add(ResourceSample(float(t), cpu_seconds=t / 2, rss_bytes=5000 if t == 4321 else t % 1000))
    assert 50 <= len(log) <= 100
    gaps = {b.t - a.t for a, b in itertools.pairwise(log)}
    assert len(gaps) == 1 and log[0].t == 0  # one spacing over the whole day, from the start
    assert log[-1].t > 24 * 3600 - 2 * gaps.pop()  # and up to the end
    assert log.max_rss_bytes == 5000  # the peak survives even though its sample was thinned out


def test_sample_log_writes_each_kept_sample_live_and_never_through_a_link(tmp_path: Path) -> None:
    from podium.sandbox._types import ResourceSample, SampleLog

    live = tmp_path / "resources.jsonl"
    log = SampleLog(limit=4, live=live)
    for t in range(10):
        log.add(ResourceSample(float(t), cpu_seconds=t / 10, rss_bytes=100 + t))
    log.close()
    written = [json.loads(line) for line in live.read_text().splitlines()]
    assert [w["t"] for w in written] == [0, 1, 2, 3, 4, 6, 8]  # every sample kept when it came (the stride doubled)
    assert written[-1] == {"t": 8.0, "cpu_seconds": 0.8, "rss_bytes": 108}  # no GPU keys without GPUs
    target = tmp_path / "elsewhere.txt"
    target.write_text("untouched\n")
    planted = tmp_path / "planted.jsonl"
    planted.symlink_to(target)
    linked = SampleLog(live=planted)
    linked.add(ResourceSample(0.0, cpu_seconds=0.0, rss_bytes=1))
    linked.close()
    assert target.read_text() == "untouched\n" and len(linked) == 1  # not written through; the samples still kept


# --- through `podium run`: what the record keeps ------------------------------------------------------

SEEING_AGENT = """
import glob, os, shutil, subprocess
print("NPROC", subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip())
print("MEMTOTAL", open("/proc/meminfo").readline().split()[1])
print("HARDWARE", os.environ["HARDWARE"])
shutil.copy(glob.glob("data/*sample*.csv")[0], "submission/submission.csv")  # relative: local has its own root
"""


@pytest.fixture(scope="module")
def practice_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One practice competition prepared offline (its data ships with scikit-learn)."""
    from podium import registry
    from podium.data.prepare import prepare_competition

    root = tmp_path_factory.mktemp("practice")
    prepare_competition(registry.get("practice-wine"), root)
    return root


def _podium_run(tmp_path: Path, data_dir: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], dict, str]:
    agent = tmp_path / "seeing"
    agent.mkdir(exist_ok=True)
    (agent / "agent.yaml").write_text("name: seeing\ncommand: [python3, /home/agent/main.py]\n")
    (agent / "main.py").write_text(SEEING_AGENT)
    runs = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", "practice-wine",
         "--time-limit", "5m", "--data-dir", str(data_dir), "--runs-dir", str(runs), *flags],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    records = sorted(runs.glob("*/*/*/record.json"))
    record = json.loads(records[0].read_text()) if records else {}
    logs = records[0].parent / "logs" / "agent.stdout.log" if records else None
    return done, record, logs.read_text() if logs and logs.is_file() else ""


def test_an_agent_capped_at_one_cpu_and_2_gib_sees_them_and_the_record_keeps_its_compute(
    bwrap: Sandbox, tmp_path: Path, practice_dir: Path
) -> None:
    """`podium run --cpus 1 --memory 2G`: the agent sees one CPU and 2 GiB (and is told so in HARDWARE); the record
    carries what it had and used (I3) and the network observed in its namespace at the start (I2)."""
    done, record, stdout = _podium_run(tmp_path, practice_dir, "--cpus", "1", "--memory", "2G")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "NPROC 1\nMEMTOTAL 2097152\nHARDWARE 1 CPU core(s), 2 GiB memory, no GPU\n" in stdout, stdout
    compute = record["compute"]
    assert (compute["cpus"], compute["memory_bytes"], compute["gpu_count"], compute["gpu_model"]) == (
        1,
        2 << 30,
        0,
        None,
    )
    assert compute["used"]["cpu_seconds"] > 0 and compute["used"]["wall_seconds"] > 0 and compute["cpu_model"]
    assert compute["used"]["peak_memory_bytes"] > 0 and compute["used"]["gpu_hours"] is None
    observed = record["isolation"]["network_observed"]
    assert [i["name"] for i in observed["interfaces"]] == ["lo"] and observed["observed_by"] == "sandbox", observed
    assert "network" not in record["agent_result"]


def test_hardware_mlebench_asks_for_the_papers_setting_and_says_what_is_missing(
    tmp_path: Path, practice_dir: Path
) -> None:
    done, _, _ = _podium_run(tmp_path, practice_dir, "--hardware", "mlebench", "--gpus", "0")
    assert done.returncode == 2 and "podium: error: --hardware mlebench sets the CPUs, memory and GPUs of each run, " \
        "and so does --gpus. Fix: drop --gpus, or --hardware" in done.stderr, done.stderr  # fmt: skip
    done, record, stdout = _podium_run(tmp_path, practice_dir, "--hardware", "mlebench", "--sandbox", "local")
    assert done.returncode == 0, done.stderr[-3000:]
    here = len(os.sched_getaffinity(0))
    if here < 36:
        assert (
            f"podium: warning: --hardware mlebench: 36 CPUs asked, but this machine gives podium {here}" in done.stderr
        )
    if not shutil.which("nvidia-smi"):
        assert "1 x NVIDIA A10 (24 GiB) asked, but this machine has no GPU(s): each run gets 0" in done.stderr
    assert record["limits"]["cpus"] == 36 and record["limits"]["memory_bytes"] == 440 << 30
    assert record["compute"]["cpus"] == min(36, here) and f"NPROC {min(36, here)}" in stdout
    assert record["isolation"]["network_observed"]["interfaces"] != [], "local: the host's network"

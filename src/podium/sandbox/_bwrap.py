"""The bubblewrap sandbox: namespaces for isolation, a per-run cgroup for caps and for killing."""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from podium import owner
from podium.errors import PodiumError
from podium.sandbox import _seccomp
from podium.sandbox._cgroup import RunCgroup, new_run_id
from podium.sandbox._disk import DiskWatch, disk_watch
from podium.sandbox._gpu import GpuMonitor, device_files, list_gpus
from podium.sandbox._process import Watched, descendants, kill_tree, open_gate, proc_usage, spawn_gated, watch
from podium.sandbox._types import ExecResult, KilledFor, Limits, Mount, check_request, host_path_of, is_within

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Host /etc entries a Python program (TLS, dynamic linking, time zones, getaddrinfo) needs; nothing else of /etc
# (not /etc/ssl/private: the sandbox user is the harness's user on the host, so it could read root-only files).
ETC_ENTRIES = (
    "alternatives",
    "ca-certificates",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "protocols",
    "services",
    "ssl/certs",
    "ssl/openssl.cnf",
)
AGENT_UID = 1000
HOME = "/home"
HOSTNAME = "podium"
_GENERATED_ETC = {
    "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:{AGENT_UID}:{AGENT_UID}:agent:{HOME}:/bin/sh\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": f"root:x:0:\nagent:x:{AGENT_UID}:\nnogroup:x:65534:\n",
    "hosts": f"127.0.0.1 localhost {HOSTNAME}\n::1 localhost\n",
}
INSTALL_HINT = (
    "Fix: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora), "
    "or choose the 'local' sandbox, which does not isolate the agent at all."
)


class BwrapSandbox:
    """Runs the agent in fresh namespaces (mount, pid, net, user, ipc, uts, cgroup) with bubblewrap."""

    name = "bwrap"
    isolated = True

    def __init__(self, executable: str) -> None:
        self.executable = executable

    @classmethod
    def find(cls) -> BwrapSandbox:
        """The bwrap on PATH, after checking that it can create namespaces here."""
        executable = shutil.which("bwrap")
        if executable is None:
            raise PodiumError(f"The 'bwrap' sandbox needs bubblewrap, which is not on PATH. {INSTALL_HINT}")
        problem = _probe(executable)
        if problem:
            raise PodiumError(
                f"bubblewrap ({executable}) cannot create a sandbox here: {problem}. Fix: allow user namespaces "
                "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0), or in a container "
                "give it the privilege to create namespaces."
            )
        return cls(executable)

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
    ) -> ExecResult:
        """Run ``command`` inside the sandbox; see the package docstring for what it can see and use."""
        check_request(command, mounts, limits, workdir, logs=(stdout, stderr))
        with (
            tempfile.TemporaryDirectory(prefix=f"podium-etc-{owner.own_token()}-") as etc_dir,
            open(stdout, "wb") as out,
            open(stderr, "wb") as err,
        ):
            devices = gpu_device_files(limits.gpus)
            seccomp_fd = _seccomp.program_fd() if _seccomp.supported() else None
            try:
                argv = self.argv(
                    command,
                    mounts=mounts,
                    env=env,
                    workdir=workdir,
                    etc_dir=Path(etc_dir),
                    devices=devices,
                    seccomp_fd=seccomp_fd,
                )
                result = _run_in_cgroup(argv, limits, out, err, disk_watch(mounts, limits), seccomp_fd)
            finally:
                if seccomp_fd is not None:
                    os.close(seccomp_fd)
            if seccomp_fd is None:
                result.warnings.append(
                    f"no seccomp filter: podium has no system call table for {platform.machine()!r} "
                    "(x86_64 and aarch64 only); the agent can use every system call its namespaces allow"
                )
            return result

    def argv(
        self,
        command: Sequence[str],
        *,
        mounts: Sequence[Mount],
        env: Mapping[str, str],
        workdir: str,
        etc_dir: Path,
        devices: Sequence[str] = (),
        seccomp_fd: int | None = None,
    ) -> list[str]:
        """The bwrap command line; writes the generated /etc files (passwd, group, hosts) into ``etc_dir``.

        ``devices`` are host device files (a run's GPUs) bound into the sandbox's ``/dev``.
        """
        args = [self.executable, *_NAMESPACE_OPTIONS, "--clearenv"]
        for key, value in {**default_env(), **env}.items():
            args += ["--setenv", key, value]
        args += system_binds()
        args += etc_binds(etc_dir)
        for prefix in python_prefixes():
            args += ["--ro-bind", prefix, prefix]
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", HOME]
        for device in devices:
            args += ["--dev-bind", device, device]
        for mount in sorted(mounts, key=lambda m: m.target.count("/")):  # parents before what is mounted in them
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source.resolve()), mount.target]
        if host_path_of(workdir, mounts) is None:
            args += ["--dir", workdir]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return [*args, "--remount-ro", "/", "--chdir", workdir, "--", *command]


_NAMESPACE_OPTIONS = (
    "--unshare-all",  # net (private loopback only), pid, ipc, uts, cgroup, user
    "--unshare-user",
    "--uid",
    str(AGENT_UID),
    "--gid",
    str(AGENT_UID),
    "--cap-drop",
    "ALL",  # as root, bwrap would otherwise keep every capability inside its user namespace
    "--die-with-parent",
    "--new-session",  # no TIOCSTI into the harness's terminal
    "--hostname",
    HOSTNAME,
)


def default_env() -> dict[str, str]:
    """PATH (this Python first, so ``python3`` is the harness's interpreter) and HOME; the caller's env overrides."""
    return {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": HOME}


def system_binds() -> list[str]:
    """Read-only binds of the system directories, keeping merged-/usr symlinks as symlinks."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def etc_binds(etc_dir: Path) -> list[str]:
    """Read-only binds of the selected host /etc entries and of the generated passwd, group and hosts."""
    args: list[str] = []
    for name in ETC_ENTRIES:
        if os.path.lexists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for name, text in _GENERATED_ETC.items():
        (etc_dir / name).write_text(text)
        args += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    return args


def python_prefixes() -> list[str]:
    """The installation(s) of the running interpreter (a venv and its base), outside the system dirs."""
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates |= {os.path.realpath(path) for path in candidates}
    outside = {p for p in candidates if not any(is_within(p, system) for system in SYSTEM_DIRS)}
    return sorted(p for p in outside if not any(p != q and is_within(p, q) for q in outside))


def gpu_device_files(indices: Sequence[int]) -> list[str]:
    """Device files for the host GPUs ``indices``; a clear error when one of them does not exist."""
    if not indices:
        return []
    gpus = {gpu.index: gpu for gpu in list_gpus(required=True)}
    missing = [i for i in indices if i not in gpus]
    if missing:
        raise PodiumError(
            f"GPU(s) {missing} asked for, but this machine has {len(gpus)} GPU(s) (indices {sorted(gpus)}). "
            "Fix: ask for fewer GPUs (--gpus) or fewer concurrent runs (--workers)."
        )
    files: list[str] = []
    for index in indices:
        files += [f for f in device_files(gpus[index]) if f not in files]
    return files


def _run_in_cgroup(
    argv: list[str], limits: Limits, out: IO[bytes], err: IO[bytes], disk: DiskWatch | None, seccomp_fd: int | None
) -> ExecResult:
    cgroup = RunCgroup.create(new_run_id(), limits)
    try:
        watched = _watch_in(cgroup, argv, limits, out, err, disk, seccomp_fd)
        killed_for: KilledFor | None = (
            "time" if watched.timed_out else "disk" if watched.over_disk else "memory" if cgroup.oom_killed() else None
        )
        peak = cgroup.peak_memory_bytes()
        if peak is None:
            peak = max(watched.max_rss_bytes, watched.samples.max_rss_bytes)
    finally:
        cgroup.kill_all()  # nothing can outlive bwrap's pid namespace, but make sure before removing the groups
        cgroup.remove()
    return ExecResult(
        exit_code=watched.exit_code,
        timed_out=watched.timed_out,
        killed_for=killed_for,
        seconds=watched.seconds,
        peak_memory_bytes=peak,
        samples=list(watched.samples),
        warnings=cgroup.warnings,
    )


def _watch_in(
    cgroup: RunCgroup,
    argv: list[str],
    limits: Limits,
    out: IO[bytes],
    err: IO[bytes],
    disk: DiskWatch | None,
    seccomp_fd: int | None,
) -> Watched:
    process = spawn_gated(
        argv,
        env={"PATH": "/usr/bin:/bin"},
        cwd=Path("/"),
        stdout=out,
        stderr=err,
        pass_fds=() if seccomp_fd is None else (seccomp_fd,),
    )
    try:
        cgroup.enter(process.pid, limits)
        open_gate(process)

        def measure() -> tuple[float, int]:
            cpu, memory = cgroup.cpu_seconds(), cgroup.memory_bytes()
            if cpu is None or memory is None:
                proc_cpu, proc_rss = proc_usage(cgroup.pids() or descendants(process.pid))
                cpu, memory = proc_cpu if cpu is None else cpu, proc_rss if memory is None else memory
            return cpu, memory

        return watch(
            process,
            wall_seconds=limits.wall_seconds,
            measure=measure,
            kill=lambda: _kill(process.pid, cgroup),
            gpus=GpuMonitor(limits.gpus) if limits.gpus else None,
            disk=disk,
        )
    finally:
        if process.returncode is None:  # the harness itself failed or was interrupted
            _kill(process.pid, cgroup)
            process.wait()


def _kill(outer_pid: int, cgroup: RunCgroup) -> None:
    """Kill bwrap and everything below it. Killing bwrap's pid 1 ends its whole pid namespace at once."""
    kill_tree(outer_pid)
    cgroup.kill_all()


@functools.cache
def _probe(executable: str) -> str | None:
    """Why bwrap cannot start a trivial sandbox here, or None when it can."""
    argv = [executable, *_NAMESPACE_OPTIONS, *system_binds(), "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit code {done.returncode}")

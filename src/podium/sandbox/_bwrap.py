"""The bubblewrap sandbox: namespaces for isolation, a per-run cgroup for caps and for killing.

The command runs in new namespaces (mount, pid, net with only a private loopback, user, ipc, uts,
cgroup), with the environment cleared (only the given ``env`` over ``PATH`` and ``HOME=/home``),
every capability dropped, ``no_new_privs``, podium's seccomp filter, in a new session (no terminal
injection), and dies with the harness (``--die-with-parent``). Its ``/`` is the host's system
directories and a few /etc entries, read-only; or, with ``root`` (a root-filesystem environment,
:mod:`podium.environments.rootfs`), that folder alone, read-only, so nothing of the host's system is
visible. Its mounts come from the run's stage
(:mod:`podium.sandbox._stage`); bwrap reads its options from a file descriptor, so its command line
names no host path. As root, bwrap runs as the run's agent id (:mod:`podium.sandbox._ids`): the
user namespace it makes then maps the agent to that unprivileged host id, never to host root.

Limits: each run gets cgroup v1 groups ``/sys/fs/cgroup/<controller>/podium/<run>`` for ``memory``
(``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``; tmpfs files count), ``pids``
(``pids.max``; threads count, and so do bwrap's own two processes), ``cpu`` (CFS quota, when
``cpus`` is set) and ``cpuacct``. bwrap is moved into them before it starts (it waits on a gate
until then), so every process of the run is inside. A kernel OOM kill in the group is reported as
``killed_for="memory"``. At the wall limit the harness SIGKILLs bwrap's pid 1, which ends the whole
pid namespace (grandchildren that called ``setsid`` or double-forked included), then every task
left in the cgroup, then removes the groups; a normal exit ends the namespace the same way. Usage
(cgroup memory charge, cpuacct CPU time; /proc sums without cgroups) is sampled every second. If
cgroups cannot be created, the run still happens, isolated and wall-clock limited, without the
memory, pids and cpu caps, and ``ExecResult.warnings`` says so. GPUs (``Limits.gpus``, host indices
as nvidia-smi numbers them): their device files (``/dev/nvidia<minor>`` and the control devices) are
bound into ``/dev``, nothing else of the host's devices. Not covered: the size of stdout/stderr.
This module builds bwrap's options; :mod:`podium.sandbox._bwrap_run` runs and watches it.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from podium.errors import PodiumError
from podium.sandbox import _seccomp
from podium.sandbox._bwrap_run import StartGate, run_in_cgroup
from podium.sandbox._gpu import DRIVER_ROOT, device_files, driver_folder, list_gpus
from podium.sandbox._ids import probe_ids
from podium.sandbox._limits import cpu_share, thread_env
from podium.sandbox._procfs import ProcView
from podium.sandbox._python import SYSTEM_DIRS, Cover, host_python
from podium.sandbox._stage import HOME, HOSTNAME, Staged, staged
from podium.sandbox._types import ExecResult, Limits, Mount, check_request, host_path_of

#: PATH inside a root-filesystem environment.
ROOTFS_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
# Host /etc entries a Python program (TLS, dynamic linking, time zones, getaddrinfo) needs; nothing else of /etc
# (not /etc/ssl/private, whatever its mode).
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
# /proc entries a process never needs to change (bound read-only) or to read (covered): the runtime
# defaults of Docker/runc. The agent is not host root, so the kernel refuses those writes anyway; this is a second wall.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")
PROC_MASKED_FILES = ("kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug")
PROC_MASKED_FOLDERS = ("acpi", "asound", "scsi")
INSTALL_HINT = (
    "Fix: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora), "
    "or choose the 'local' sandbox, which does not isolate the agent at all."
)


class BwrapSandbox:
    """Runs the agent in fresh namespaces (mount, pid, net, user, ipc, uts, cgroup) with bubblewrap."""

    name = "bwrap"
    isolated = True

    def __init__(self, executable: str, root: Path | None = None) -> None:
        self.executable = executable
        self.root = root  # a root filesystem to run in (mounted read-only as /) instead of the host's system

    @classmethod
    def find(cls) -> BwrapSandbox:
        """The bwrap on PATH, after checking that it can create namespaces here."""
        executable = shutil.which("bwrap")
        if executable is None:
            raise PodiumError(f"The 'bwrap' sandbox needs bubblewrap, which is not on PATH. {INSTALL_HINT}")
        problem = _probe(executable)
        if problem:
            who = " as an unprivileged id (podium runs bwrap as the agent's own id when it is root)"
            raise PodiumError(
                f"bubblewrap ({executable}) cannot create a sandbox here{who if os.getuid() == 0 else ''}: {problem}. "
                "Fix: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 where it "
                "exists, user.max_user_namespaces > 0; on Ubuntu 24.04 keep bwrap's AppArmor profile, or set "
                "kernel.apparmor_restrict_unprivileged_userns=0), or in a container give it the privilege to "
                "create namespaces."
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
        samples_file: Path | None = None,
        hidden: Sequence[Path] = (),
    ) -> ExecResult:
        """Run ``command`` inside the sandbox; see the package docstring for what it can see and use."""
        check_request(command, mounts, limits, workdir, logs=(stdout, stderr))
        devices = gpu_device_files(limits.gpus)
        python = host_python([*hidden, *(m.source for m in mounts if m.writable)]) if self.root is None else None
        env = {**python.env, **env} if python is not None else dict(env)
        # the logs are opened once the writable folders are staged: they stay in the host folder
        # the host's Python is not in another system; the root filesystem is staged as a prefix is, so that
        # bwrap, running as the agent's unprivileged id, can reach it wherever it lies
        prefixes = python.shown if python is not None else [str(self.root)]
        with (
            cpu_share(limits) as cpus,
            staged(mounts, limits, prefixes) as stage,
            open(stdout, "wb") as out,
            open(stderr, "wb") as err,
            StartGate() as gate,
        ):
            view = ProcView(stage.etc_dir, cpus, limits.memory_bytes, stage.meminfo)
            seccomp_fd = _seccomp.program_fd() if _seccomp.supported() else None
            args_fd = None
            try:
                options = self.options(
                    staged=stage,
                    env=thread_env(cpus, env),
                    view=view,
                    workdir=workdir,
                    devices=devices,
                    seccomp_fd=seccomp_fd,
                    covers=python.covers if python is not None else (),
                    gpus=limits.gpus,
                    gate=gate,
                )
                # bwrap reads its options from a file descriptor: its command line (pid 1's, inside) is only
                # `bwrap --args N -- COMMAND`, with no host path and no environment value in it
                args_fd = _memfd("podium-bwrap-args", b"".join(os.fsencode(a) + b"\0" for a in options))
                result = run_in_cgroup(
                    [self.executable, "--args", str(args_fd), "--", *command],
                    limits,
                    out,
                    err,
                    stage.disk,
                    pass_fds=tuple(fd for fd in (seccomp_fd, args_fd, *gate.child_fds) if fd is not None),
                    ids=(stage.uid, stage.gid) if os.getuid() == 0 else None,
                    samples_file=samples_file,
                    cpus=cpus,
                    gate=gate,
                    view=view,
                )
            finally:
                for fd in (seccomp_fd, args_fd):
                    if fd is not None:
                        os.close(fd)
        result.warnings.extend([*(python.warnings if python is not None else ()), *stage.warnings])
        closed = [d for d in devices if os.getuid() == 0 and os.stat(d).st_mode & 0o006 != 0o006]
        if closed:
            result.warnings.append(
                f"GPU device file(s) {closed} are not readable and writable by every user, so the agent's id "
                "cannot open them. Fix: load the NVIDIA driver with NVreg_DeviceFileMode=0666 (its default)."
            )
        if seccomp_fd is None:
            result.warnings.append(
                f"no seccomp filter: podium has no system call table for {platform.machine()!r} "
                "(x86_64 and aarch64 only); the agent can use every system call its namespaces allow"
            )
        return result

    def options(
        self,
        *,
        staged: Staged,
        env: Mapping[str, str],
        workdir: str,
        devices: Sequence[str] = (),
        seccomp_fd: int | None = None,
        covers: Sequence[Cover] = (),
        gpus: Sequence[int] = (),
        gate: StartGate | None = None,
        view: ProcView | None = None,
    ) -> list[str]:
        """bwrap's options (what comes before ``-- COMMAND``) for a run whose mounts were staged as ``staged``.

        ``devices`` are host device files (a run's GPUs, host indices ``gpus``) bound into the sandbox's ``/dev``;
        ``covers`` are the dotfiles and credential files in the host Python's folders, covered; ``gate`` holds the
        command until the run's network was observed; ``view`` holds the run's own ``/proc/meminfo``, ``cpuinfo``,
        ``stat`` and CPU lists of ``/sys/devices/system/cpu`` (its pinned CPUs), bound over ``/proc``'s and into an
        otherwise empty read-only ``/sys``.
        """
        args = [*namespace_options(staged.uid, staged.gid), "--clearenv"]
        if gate is not None:
            args += gate.options()
        base = default_env() if self.root is None else {"PATH": ROOTFS_PATH, "HOME": HOME}
        for key, value in {**base, **env}.items():
            args += ["--setenv", key, value]
        if self.root is not None:  # another system as /, with the run's own passwd, group and hosts
            source = next((s for s, target in staged.prefixes if target == str(self.root)), str(self.root))
            args += ["--ro-bind", source, "/"]
            for name in ("passwd", "group", "hosts"):
                args += ["--ro-bind", str(staged.etc_dir / name), f"/etc/{name}"]
        else:
            args += system_binds()
            args += etc_binds(staged.etc_dir)
        args += ["--proc", "/proc", *proc_covers(), *gpu_driver_covers(gpus)]
        for host_file, inside in view.proc_binds() if view is not None else ():  # its memory cap, its CPUs
            args += ["--ro-bind", str(host_file), inside]
        if view is not None and view.sys_binds():  # its CPUs as the online ones; nothing else of the host's /sys
            args += ["--tmpfs", "/sys"]
            for host_file, inside in view.sys_binds():
                args += ["--ro-bind", str(host_file), inside]
            args += ["--remount-ro", "/sys"]
        args += ["--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", HOME]
        # after the tmpfs /tmp and /home: an installation under /home/<user> or /tmp stays visible
        for source, target in staged.prefixes:
            if self.root is None:
                args += ["--ro-bind", source, target]
        for cover in covers:  # an empty file or read-only folder over each dotfile and credential file
            args += (
                ["--tmpfs", cover.path, "--remount-ro", cover.path]
                if cover.folder
                else ["--ro-bind", str(staged.empty_file), cover.path]
            )
        for device in devices:
            args += ["--dev-bind", device, device]
        for mount in sorted(staged.mounts, key=lambda m: m.target.count("/")):  # parents before what is in them
            args += ["--bind" if mount.writable else "--ro-bind", str(mount.source), mount.target]
        if host_path_of(workdir, staged.mounts) is None:
            args += ["--dir", workdir]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        return [*args, "--remount-ro", "/", "--chdir", workdir]


def namespace_options(uid: int, gid: int) -> list[str]:
    """Every namespace new; the agent's id inside is its host id (see :mod:`podium.sandbox._ids`)."""
    return [
        "--unshare-all",  # net (private loopback only), pid, ipc, uts, cgroup, user
        "--unshare-user",
        "--uid",
        str(uid),
        "--gid",
        str(gid),
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the harness's terminal
        "--hostname",
        HOSTNAME,
    ]


def proc_covers() -> list[str]:
    """Read-only binds and covers over the sandbox's /proc (for the entries this kernel has)."""
    args: list[str] = []
    for name in PROC_READ_ONLY:
        if os.path.lexists(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_MASKED_FILES:
        if os.path.lexists(f"/proc/{name}"):
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    for name in PROC_MASKED_FOLDERS:
        if os.path.isdir(f"/proc/{name}"):
            args += ["--tmpfs", f"/proc/{name}", "--remount-ro", f"/proc/{name}"]
    return args


def _memfd(name: str, data: bytes) -> int:
    """A memfd holding ``data``, at offset 0 (close-on-exec: only a spawn that passes it on keeps it)."""
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


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
    for name in ("passwd", "group", "hosts"):
        args += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    return args


def gpu_driver_covers(indices: Sequence[int], driver_root: Path = DRIVER_ROOT) -> list[str]:
    """Options that leave in the sandbox's ``/proc/driver/nvidia/gpus`` (which NVML and CUDA enumerate) only the
    folders of the GPUs ``indices``: a read-only empty folder with those bound into it."""
    if not driver_root.is_dir():
        return []
    root = str(driver_root)
    args = ["--tmpfs", root]
    if indices:
        gpus = {gpu.index: gpu for gpu in list_gpus(required=True)}
        for index in indices:
            folder = driver_folder(gpus[index], driver_root) if index in gpus else None
            if folder is not None:
                args += ["--ro-bind", str(folder), str(folder)]
    return [*args, "--remount-ro", root]


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


@functools.cache
def _probe(executable: str) -> str | None:
    """Why bwrap cannot start a trivial sandbox here (as the agent's id when root), or None when it can."""
    uid, gid = probe_ids()
    argv = [executable, *namespace_options(uid, gid), *system_binds(), "--proc", "/proc", *proc_covers()]
    argv += ["--dev", "/dev", "--", "true"]
    root = os.getuid() == 0
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            user=uid if root else None,
            group=gid if root else None,
            extra_groups=[] if root else None,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit code {done.returncode}")

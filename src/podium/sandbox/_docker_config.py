"""The container a Docker run gets: every isolation setting and cap, as keyword arguments for ``containers.create``.

What bwrap shows, a container shows: the host's system directories, a short list of ``/etc`` entries
and the host's Python (its package folders and interpreter, dotfiles and credential files covered)
read-only (host image only), the run's mounts, fresh ``/tmp`` (and ``/home``), no network, the run's
agent id, no capabilities, ``no-new-privileges``, podium's seccomp profile, ``--init``; memory without
swap (and a ``/proc/meminfo`` that says so), CPUs (a quota, and the cpuset the run is pinned to),
processes, ``/dev/shm`` and GPUs by exact index.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.sandbox import _seccomp
from podium.sandbox._bwrap import ETC_ENTRIES, default_env
from podium.sandbox._python import SYSTEM_DIRS, Cover, host_python
from podium.sandbox._stage import EMPTY_FILE, HOME, HOSTNAME
from podium.sandbox._types import Limits, Mount

__all__ = ["DEFAULT_SHM_BYTES", "HARNESS_LABEL", "container_config", "harness_id"]

#: The label naming the podium process (host and pid) that started a container.
HARNESS_LABEL = "podium.harness"
DEFAULT_SHM_BYTES = 2 << 30


def harness_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def container_config(
    image: str,
    command: Sequence[str],
    *,
    host: bool,
    mounts: Sequence[Mount],
    env: Mapping[str, str],
    limits: Limits,
    workdir: str,
    user: str,
    cgroup_parent: str | None = None,
    prefixes: Sequence[tuple[str, str]] | None = None,
    etc_dir: Path | None = None,
    covers: Sequence[Cover] = (),
    cpuset: Sequence[int] | None = None,
    generated: Sequence[tuple[Path, str]] = (),
) -> dict[str, Any]:
    """The keyword arguments for ``containers.create`` of one run in ``image`` (``host``: podium's host image).

    ``prefixes`` are the (source, target) folders and files of the host's Python (default: this one's, bound
    as they are) and ``covers`` the dotfiles and credential files in them, covered; ``etc_dir`` holds the run's
    generated passwd and group, bound over the host image's. ``cpuset`` are the CPUs the container is pinned
    to; ``generated`` are (file, where it is shown) of the run's own ``/proc/meminfo``, ``/proc/cpuinfo``,
    ``/proc/stat`` and ``/sys/devices/system/cpu/{online,possible,present}`` (:mod:`podium.sandbox._procfs`).
    """
    from docker.types import DeviceRequest, LogConfig
    from docker.types import Mount as DockerMount

    binds: list[DockerMount] = []
    if host:
        for path in SYSTEM_DIRS:
            if os.path.isdir(path) and not os.path.islink(path) and path != "/sbin":
                binds.append(DockerMount(path, path, type="bind", read_only=True))
        for name in ETC_ENTRIES:
            if os.path.exists(f"/etc/{name}"):
                binds.append(DockerMount(f"/etc/{name}", os.path.realpath(f"/etc/{name}"), type="bind", read_only=True))
        if prefixes is None:
            python = host_python()
            prefixes, covers = [(p, p) for p in python.shown], python.covers
        for source, target in prefixes:
            binds.append(DockerMount(target, source, type="bind", read_only=True))
        if etc_dir is not None:
            for name in ("passwd", "group"):
                binds.append(DockerMount(f"/etc/{name}", str(etc_dir / name), type="bind", read_only=True))
    for mount in mounts:
        binds.append(DockerMount(mount.target, str(mount.source.resolve()), type="bind", read_only=not mount.writable))
    # runc allows these files of /proc to be replaced (as LXCFS does); /sys's are the CPUs it is pinned to
    for host_file, inside in generated:
        binds.append(DockerMount(inside, str(host_file), type="bind", read_only=True))
    memory = limits.memory_bytes
    tmpfs = {"/tmp": "rw,nosuid,nodev"}
    if host:
        tmpfs[HOME] = "rw,nosuid,nodev,mode=1777"
    for cover in covers:  # an empty file or read-only folder over each dotfile and credential file
        if cover.folder:
            tmpfs[cover.path] = "ro,nosuid,nodev,noexec,size=4k"
        else:
            binds.append(
                DockerMount(
                    cover.path, str(etc_dir / EMPTY_FILE) if etc_dir else "/dev/null", type="bind", read_only=True
                )
            )
    if not limits.gpus:  # as under bwrap, the host's hardware details stay hidden (GPU stacks may read /sys)
        tmpfs["/sys"] = "ro,nosuid,nodev,noexec,size=4k"
    config: dict[str, Any] = {
        "image": image,
        "command": list(command),
        "environment": {**(default_env() if host else {}), **env},
        "working_dir": workdir,
        "user": user,
        "hostname": HOSTNAME,
        "network_mode": "none",
        "ipc_mode": "private",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges", *_seccomp_option()],
        "init": True,
        "mounts": binds,
        "read_only": host,
        "tmpfs": tmpfs,
        "shm_size": limits.shm_bytes or (min(DEFAULT_SHM_BYTES, memory // 2) if memory else DEFAULT_SHM_BYTES),
        "pids_limit": limits.pids or -1,
        "labels": {HARNESS_LABEL: harness_id()},
        "log_config": LogConfig(type="json-file", config={"max-size": "10m", "max-file": "1"}),
        "stdin_open": False,
        "tty": False,
    }
    if cgroup_parent:
        config["cgroup_parent"] = cgroup_parent
    if memory:
        config["mem_limit"] = memory
        config["memswap_limit"] = memory
    if limits.cpus:
        config["nano_cpus"] = int(limits.cpus * 1e9)
    if cpuset is not None:
        config["cpuset_cpus"] = ",".join(str(cpu) for cpu in cpuset)
    if limits.gpus:
        config["device_requests"] = [
            DeviceRequest(device_ids=[str(i) for i in limits.gpus], capabilities=[["gpu"]], driver="nvidia")
        ]
    return config


def _seccomp_option() -> list[str]:
    """podium's seccomp profile for the container (the same policy as bwrap's), where it has a table."""
    return [f"seccomp={_seccomp.docker_profile()}"] if _seccomp.supported() else []

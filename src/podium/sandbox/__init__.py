"""Sandboxes: where an agent's command runs, and what it can see and use there.

One protocol, :class:`Sandbox`, with one method, ``run(command, mounts=, env=, limits=, workdir=,
stdout=, stderr=) -> ExecResult``. The implementations differ only in how much they isolate::

    sandbox = get_sandbox("bwrap")
    result = sandbox.run(
        ["python3", "agent.py"],
        mounts=[Mount(public_dir, "/home/data"), Mount(out_dir, "/home/submission", writable=True)],
        env={"OMP_NUM_THREADS": "1"},
        limits=Limits(wall_seconds=3600, memory_bytes=8 << 30, pids=512),
        workdir="/home/submission",
        stdout=logs / "stdout.txt",
        stderr=logs / "stderr.txt",
    )

``bwrap`` (bubblewrap; ``isolated = True``; :mod:`podium.sandbox._bwrap`)
    Every namespace new (no network but a private loopback, own pid namespace), no capabilities,
    ``no_new_privs``, podium's seccomp policy, the system directories, a short list of ``/etc``
    entries and the host's Python (the folders on its path and its interpreter's files, never a home, dotfiles and
    credential files covered, :mod:`~podium.sandbox._python`) read-only, fresh tmpfs ``/tmp`` and ``/home``, ``/proc/sys``
    and the like read-only, and only the given mounts. As root, bwrap runs as the run's agent id.
    Caps through cgroup v1 groups ``<controller>/podium/<run>`` (memory, pids, cpu; a warning where
    they cannot be made); at the wall limit bwrap's pid 1 and every task of the groups are killed.

``docker`` (``isolated = True``; :mod:`podium.sandbox._docker`)
    One container per run on a local engine, never pulling: the host image (what bwrap shows) or
    the agent's own image; the same ids, seccomp policy, stage and caps, and the wall limit held
    through podium's own cgroup even without the engine (a lost engine is a ``HarnessError``).

``local`` (``isolated = False``; :mod:`podium.sandbox._local`)
    No isolation, for debugging trusted agents: a loud warning on every run, the wall limit, an
    ``RLIMIT_AS`` for memory, the disk check.

Shared by bwrap and docker: the agent's host id, never root nor an account's
(:mod:`~podium.sandbox._ids`); the per-run stage every mount comes from, which names no host
path to the agent (:mod:`~podium.sandbox._stage`); the disk cap, a filesystem per run or a
periodic check (:mod:`~podium.sandbox._disk`); one seccomp policy (:mod:`~podium.sandbox._seccomp`).
In every sandbox what the writable mounts hold when a run ends is handed to the harness's user as
plain files, folders and links (:mod:`~podium.sandbox._handback`); the agent sees its own limits (CPUs pinned
to its cap, a ``/proc/meminfo`` of its memory cap, the BLAS thread variables, :mod:`~podium.sandbox._limits`;
its CPUs in ``/proc/cpuinfo``, ``/proc/stat`` and ``/sys``, its free memory live, :mod:`~podium.sandbox._procfs`);
its network is observed in its namespace before it starts (``ExecResult.network``,
:mod:`~podium.sandbox._network`); :func:`run_compute` says what compute the run had and used, and
:func:`shortfalls` what of a named setting (:data:`HARDWARE`) this machine cannot give. ``ExecResult.warnings`` lists
every limit or isolation asked for but not enforced. ``docs/running.md`` has the threat model:
what an agent can and cannot reach, as root and as a normal user.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

from podium.errors import PodiumError
from podium.sandbox._bwrap import ROOTFS_PATH, BwrapSandbox, default_env
from podium.sandbox._cgroup import sweep_abandoned
from podium.sandbox._compute import HARDWARE, Hardware, cpu_model, host_cpus, run_compute, shortfalls
from podium.sandbox._gpu import Gpu, list_gpus
from podium.sandbox._limits import host_memory_bytes
from podium.sandbox._local import LocalSandbox
from podium.sandbox._process import kill_tree, stat_fields
from podium.sandbox._types import ExecResult, Limits, Mount, ResourceSample, Sandbox

SANDBOXES = ("bwrap", "docker", "local")

__all__ = [
    "HARDWARE",
    "ROOTFS_PATH",
    "SANDBOXES",
    "BwrapSandbox",
    "ExecResult",
    "Gpu",
    "Hardware",
    "Limits",
    "LocalSandbox",
    "Mount",
    "ResourceSample",
    "Sandbox",
    "build_agent_image",
    "cpu_model",
    "default_env",
    "get_sandbox",
    "host_cpus",
    "host_memory_bytes",
    "kill_tree",
    "list_gpus",
    "run_compute",
    "shortfalls",
    "stat_fields",
    "sweep_abandoned",
]


def get_sandbox(name: str, image: str | None = None, root: Path | None = None) -> Sandbox:
    """The sandbox called ``name`` (one of :data:`SANDBOXES`), checked to work on this machine.

    ``image`` (docker only) is an agent image already on the engine; None runs the host image.
    ``root`` is a root filesystem the agent runs in, read-only, instead of the host's system: bwrap binds it
    as ``/``; docker imports it as a local image (``podium-rootfs:<environment folder>``) and runs that.
    """
    if root is not None:
        if name == "bwrap":
            return BwrapSandbox(BwrapSandbox.find().executable, root)
        if name == "docker":  # imported as a local image once, then run as an agent image is
            from podium.sandbox._docker_images import rootfs_image

            host = os.environ.get("DOCKER_HOST", "")
            return _docker_sandbox(host, rootfs_image(_docker_sandbox(host, None).client, root))  # type: ignore[attr-defined]
        raise PodiumError(
            f"The agent's environment is a root filesystem ({root}), which the {name!r} sandbox cannot run "
            "(it runs the agent on this host as it is). Fix: pass --sandbox bwrap or --sandbox docker"
        )
    if image is not None and name != "docker":
        raise PodiumError(
            f"The agent runs in the image {image!r}, which only the 'docker' sandbox can start. "
            "Fix: pass --sandbox docker, or drop 'image:' from the agent's agent.yaml."
        )
    if name == "bwrap":
        return BwrapSandbox.find()
    if name == "docker":
        return _docker_sandbox(os.environ.get("DOCKER_HOST", ""), image)
    if name == "local":
        return LocalSandbox()
    raise PodiumError(f"Unknown sandbox {name!r}. Choose one of: {', '.join(SANDBOXES)}.")


@functools.cache
def _docker_sandbox(docker_host: str, image: str | None) -> Sandbox:
    """One DockerSandbox per engine and image in a process: connecting, checking the image, removing the
    orphans of killed harnesses and finding the host image happen once, not before every run."""
    from podium.sandbox._docker import DockerSandbox

    return DockerSandbox.find(image)


def build_agent_image(folder: Path, tag: str, build_args: Mapping[str, str] | None = None) -> str:
    """Build an agent's image from ``folder``'s Dockerfile on the engine of ``DOCKER_HOST`` (never pulling)."""
    from podium.sandbox._docker import DockerSandbox

    return DockerSandbox.find().build(folder, tag, build_args)

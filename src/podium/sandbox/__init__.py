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

from podium.sandbox._bwrap import ROOTFS_PATH, BwrapSandbox, default_env
from podium.sandbox._cgroup import sweep_abandoned
from podium.sandbox._compute import HARDWARE, Hardware, cpu_model, host_cpus, run_compute, shortfalls
from podium.sandbox._gpu import Gpu, list_gpus
from podium.sandbox._limits import host_memory_bytes
from podium.sandbox._local import LocalSandbox
from podium.sandbox._process import kill_tree, stat_fields
from podium.sandbox._select import SANDBOXES, build_agent_image, get_sandbox
from podium.sandbox._types import ExecResult, Limits, Mount, ResourceSample, Sandbox

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

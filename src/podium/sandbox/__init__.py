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

``bwrap`` (bubblewrap; ``isolated = True``)
    What the command sees:

    * read-only binds of ``/usr`` and the other system directories (``/bin``, ``/lib``, ``/lib64``,
      ``/sbin`` as they are on the host, merged-/usr symlinks kept as symlinks);
    * from ``/etc`` only ``ssl/certs``, ``ssl/openssl.cnf``, ``ca-certificates``, ``alternatives``, ``ld.so.cache``/``ld.so.conf*``,
      ``localtime``, ``nsswitch.conf``, ``protocols``, ``services``, ``mime.types``, plus generated
      ``passwd``/``group`` (root, ``agent`` = uid 1000, nobody) and ``hosts`` (localhost only);
    * the installation of the Python running podium (``sys.prefix`` and ``sys.base_prefix``,
      read-only), first on ``PATH``, so ``python3`` and its site-packages work inside;
    * a fresh tmpfs at ``/tmp`` and at ``/home`` (``HOME``), a private ``/proc``, a minimal ``/dev``
      (null, zero, full, random, urandom, tty, pts, shm);
    * the given mounts, read-only unless ``writable``. The rest of ``/`` is an empty read-only tmpfs.

    What it does not see: every other host path (``/work``, ``/root`` beyond the Python prefix,
    ``/etc`` beyond the list, ``/sys``, ``/var``, the data directory with the private answers, the
    harness's temp files); the host's processes (own pid namespace: ``/proc`` shows only the run);
    the harness's environment (``--clearenv``, then only the given ``env`` over ``PATH`` and
    ``HOME=/home``); any network (own network namespace with only a private loopback, so even the
    host's ``127.0.0.1`` is unreachable); host IPC, hostname, and cgroup tree. The command runs as
    uid 1000 in its own user namespace with every capability dropped and ``no_new_privs`` set, in a
    new session (no terminal injection), and dies with the harness (``--die-with-parent``). Files
    it writes to writable mounts belong, on the host, to the user running podium.

    How limits are enforced: each run gets cgroup v1 groups ``/sys/fs/cgroup/<controller>/podium/<run>``
    for ``memory`` (``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes``; tmpfs files count),
    ``pids`` (``pids.max``; threads count, and so do bwrap's own two processes), ``cpu`` (CFS quota, when ``cpus`` is
    set) and ``cpuacct``. bwrap is moved into them before it starts (it waits on a gate until then),
    so every process of the run is inside. A kernel OOM kill in the group is reported as
    ``killed_for="memory"``. At the wall limit the harness SIGKILLs bwrap's pid 1, which ends the
    whole pid namespace (grandchildren that called ``setsid`` or double-forked included), then every
    task left in the cgroup, then removes the groups. When the command exits normally the namespace
    ends the same way, so nothing of a run outlives it. Usage (cgroup memory charge, cpuacct CPU
    time; /proc sums without cgroups) is sampled every second into ``samples``. If cgroups cannot be
    created, the run still happens, isolated and wall-clock limited, but without the memory, pids and
    cpu caps, and ``ExecResult.warnings`` says so.

    If the harness itself is SIGKILLed, bwrap dies with it (and with bwrap the namespace), but the
    empty cgroup directories of that run stay behind.

    GPUs (``Limits.gpus``, host indices as nvidia-smi numbers them): their device files
    (``/dev/nvidia<minor>`` and the control devices) are bound into ``/dev``; nothing else of the
    host's devices is. Their utilisation and memory are sampled with nvidia-smi into ``samples``.

    ``Limits.disk_bytes`` (every sandbox): the space allocated below the writable mounts is measured
    every 5 s and the run is killed above the cap (``killed_for="disk"``); a check, not a quota.

    A seccomp filter (:mod:`podium.sandbox._seccomp`, x86_64 and aarch64) refuses with EPERM the
    system calls an agent never needs and that widen the kernel surface: keyrings, bpf,
    perf_event_open, userfaultfd, io_uring, new namespaces (``unshare``, ``setns``, ``clone`` with
    namespace flags; ``clone3`` answers ENOSYS), mounts, modules, kexec, file handles, and every
    other ABI's system calls.

    Not covered: no limit on the size of stdout/stderr.

``docker`` (``isolated = True``; :mod:`podium.sandbox._docker` has the details)
    One container per run on a local Docker engine (``DOCKER_HOST``, else the default socket;
    ``scripts/dockerd.sh`` starts one with its own data root), through the Docker SDK. The default
    *host image* shows what bwrap shows (system dirs, the ``/etc`` list, the Python installation, all
    read-only; a read-only root; fresh tmpfs ``/tmp`` and ``/home``); an *agent image* (``image:`` in
    ``agent.yaml``, or ``build:`` a Dockerfile folder) carries its own system. Images are never
    pulled: a missing image or base image is an error that says how to build or load it. No network
    (``network_mode=none``; the validation socket is bind-mounted), uid 1000 (the harness's uid when
    it is not root; writable mounts are handed to that uid for the run and back after), every
    capability dropped, ``no-new-privileges``, Docker's default seccomp profile, ``--init`` as pid 1,
    ``/sys`` masked by an empty tmpfs unless GPUs are given. Caps: ``mem_limit`` = ``memswap_limit``,
    ``nano_cpus``, ``pids_limit``, ``shm_size`` (``Limits.shm_bytes``, default min(2 GiB, memory/2)),
    GPUs by ``device_requests`` for the exact indices. The container sits in a per-run parent cgroup
    ``podium/<run>`` that podium reads for CPU time, memory and peak memory (the stats API where the
    engine is not local). At the wall limit the container is killed (its whole pid namespace) and
    removed; containers of a harness that was SIGKILLed are removed when the next docker sandbox
    opens on that host. A container that ends before the first sample (0.2 s) still gets its peak
    memory from the parent cgroup; its ``samples`` may be empty.

``local`` (``isolated = False``)
    No isolation. The command runs as the harness's user on the host, with the whole host
    filesystem (answers included), network, and processes reachable; it prints a loud warning to
    stderr on every run and records it in ``warnings``. Mounts become symlinks ``<run root>/<target>``
    in a per-run temporary root, and the command starts in ``<run root>/<workdir>`` with
    ``HOME=<run root>/home``; command arguments and environment values that are paths inside the
    mounts or the workdir are rewritten to ``<run root>/<path>``, but paths in the agent's own code are
    not, so it must find its files relative to its working directory or its own location. Read-only mounts are not enforced, nested mounts are refused. The wall
    limit kills the command's process group and descendants (a process that calls ``setsid`` and
    is re-parented escapes); ``memory_bytes`` becomes an ``RLIMIT_AS`` per process (the command sees
    allocation failures, ``killed_for`` stays ``None``); ``pids`` and ``cpus`` are ignored.
"""

from __future__ import annotations

import functools
import os

from podium.errors import PodiumError
from podium.sandbox._bwrap import BwrapSandbox
from podium.sandbox._local import LocalSandbox
from podium.sandbox._types import ExecResult, Limits, Mount, ResourceSample, Sandbox

SANDBOXES = ("bwrap", "docker", "local")

__all__ = [
    "SANDBOXES",
    "BwrapSandbox",
    "ExecResult",
    "Limits",
    "LocalSandbox",
    "Mount",
    "ResourceSample",
    "Sandbox",
    "get_sandbox",
]


def get_sandbox(name: str, image: str | None = None) -> Sandbox:
    """The sandbox called ``name`` (one of :data:`SANDBOXES`), checked to work on this machine.

    ``image`` (docker only) is an agent image already on the engine; None runs the host image.
    """
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

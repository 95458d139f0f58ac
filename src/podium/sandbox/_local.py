"""The local "sandbox": no isolation at all, only a wall-clock limit and a best-effort memory limit.

The command runs as the harness's user on the host, with the whole host filesystem (answers
included), network and processes reachable; a loud warning goes to stderr on every run and into
``warnings``. Mounts become symlinks ``<run root>/<target>`` in a per-run temporary root, and the
command starts in ``<run root>/<workdir>`` with ``HOME=<run root>/home``; command arguments and
environment values that are paths inside the mounts or the workdir are rewritten to
``<run root>/<path>``, but paths in the agent's own code are not, so it must find its files relative
to its working directory or its own location. Read-only mounts are not enforced, nested mounts are
refused. The wall limit kills the command's process group and descendants (a process that calls
``setsid`` and is re-parented escapes); ``memory_bytes`` becomes an ``RLIMIT_AS`` per process (the
command sees allocation failures, ``killed_for`` stays ``None``); ``pids`` is ignored; ``cpus`` pins
the command to that many CPUs (its affinity, :mod:`podium.sandbox._limits`, which it may widen again)
and sets the thread variables; the disk cap is the periodic check. The network recorded is the host's. What the writable mounts hold afterwards is handed over as in
every sandbox (:func:`podium.sandbox._handback.hand_over`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from podium import owner
from podium.errors import PodiumError
from podium.sandbox._disk import disk_watch
from podium.sandbox._handback import hand_over, harness_ids
from podium.sandbox._limits import cpu_share, thread_env
from podium.sandbox._network import observe_network
from podium.sandbox._process import descendants, kill_tree, open_gate, proc_usage, spawn_gated, watch
from podium.sandbox._types import ExecResult, Limits, Mount, check_request, host_path_of, is_within

NO_ISOLATION_WARNING = (
    "podium sandbox 'local' gives NO ISOLATION: the agent runs as {user} on this host and can read every file "
    "this user can (prepared answers included), use the network, see this machine's processes, and write outside "
    "its mounts (read-only mounts are not enforced). Only the wall-clock limit is enforced; the memory cap is an "
    "RLIMIT_AS per process and the pids cap is ignored. Use it only for agents you trust."
)


class LocalSandbox:
    """Runs the command directly on the host, in a per-run root that holds symlinks to the mounts."""

    name = "local"
    isolated = False

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
        hidden: Sequence[Path] = (),  # nothing is hidden from a run on the host
    ) -> ExecResult:
        """Run ``command`` in ``<run root>/<workdir>``; inside paths in it and in ``env`` become run-root paths."""
        check_request(command, mounts, limits, workdir, logs=(stdout, stderr))
        for outer, inner in ((a, b) for a in mounts for b in mounts if a is not b):
            if is_within(inner.target, outer.target):  # the symlink would have to be created in the host source
                raise PodiumError(f"The 'local' sandbox cannot nest mounts: {inner.target!r} lies in {outer.target!r}.")
        warning = NO_ISOLATION_WARNING.format(user=_user())
        print(f"\n*** WARNING: {warning} ***\n", file=sys.stderr, flush=True)
        root = owner.mkdtemp("local")
        network = observe_network()  # the harness's own namespace: the host's network
        try:
            cwd = _lay_out(root, mounts, workdir)
            env = {key: _outside(value, root, mounts, workdir) for key, value in env.items()}
            full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root / "home"), **env}
            argv = [_outside(arg, root, mounts, workdir) for arg in command]
            with contextlib.ExitStack() as stack:
                cpus = stack.enter_context(cpu_share(limits))
                with open(stdout, "wb") as out, open(stderr, "wb") as err:
                    process = spawn_gated(argv, env=thread_env(cpus, full_env), cwd=cwd, stdout=out, stderr=err)
                stack.callback(_end, process)
                if limits.memory_bytes is not None:
                    resource.prlimit(process.pid, resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
                if cpus is not None:
                    os.sched_setaffinity(process.pid, cpus)
                open_gate(process)
                watched = watch(
                    process,
                    wall_seconds=limits.wall_seconds,
                    measure=lambda: proc_usage(descendants(process.pid)),
                    kill=lambda: kill_tree(process.pid),
                    disk=disk_watch(mounts, limits),
                    samples_file=samples_file,
                )
        finally:
            shutil.rmtree(root, ignore_errors=True)  # removes the symlinks, never what they point to
            for mount in mounts:  # what leaves: plain files, no setuid bits, no FIFOs or device nodes
                if mount.writable:
                    hand_over(mount.source.resolve(), *harness_ids())
        peak = max(watched.max_rss_bytes, watched.samples.max_rss_bytes)
        return ExecResult(
            exit_code=watched.exit_code,
            timed_out=watched.timed_out,
            killed_for="time" if watched.timed_out else "disk" if watched.over_disk else None,
            seconds=watched.seconds,
            peak_memory_bytes=peak,
            samples=list(watched.samples),
            warnings=[warning],
            cpu_seconds=watched.cpu_seconds,
            network=network,
        )


def _end(process: subprocess.Popen[bytes]) -> None:
    """Kill what is left of a run the harness itself failed in (or was interrupted in)."""
    if process.returncode is None:
        kill_tree(process.pid)
        process.wait()


def _outside(value: str, root: Path, mounts: Sequence[Mount], workdir: str) -> str:
    """A command argument or env value that is a path inside the sandbox, as the path under the run root."""
    if value.startswith("/") and (host_path_of(value, mounts) is not None or is_within(value, workdir)):
        return str(root) + value
    return value


def _lay_out(root: Path, mounts: Sequence[Mount], workdir: str) -> Path:
    """Create ``root/<target>`` symlinks for the mounts, ``root/home`` and the working directory."""
    for mount in mounts:
        link = root / mount.target.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(mount.source.resolve(), target_is_directory=mount.source.is_dir())
    (root / "home").mkdir(exist_ok=True)
    cwd = root / workdir.lstrip("/")
    if host_path_of(workdir, mounts) is None:
        cwd.mkdir(parents=True, exist_ok=True)
    return cwd


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"

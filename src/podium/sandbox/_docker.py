"""The Docker sandbox: one container per run, through the Docker SDK, on an engine podium never pulls from.

Two kinds of image:

* **host image** (``image=None``, the default; what the built-in agents use): ``podium-host:<hash>``,
  built locally ``FROM scratch`` out of a few generated files (``/etc/passwd``, ``/etc/group``, the
  merged-/usr symlinks of this host). At run time the host's system directories, a short list of
  ``/etc`` entries and the running Python's installation are bind-mounted read-only, exactly as the
  bwrap sandbox shows them; the root filesystem is read-only, ``/tmp`` and ``/home`` are fresh tmpfs.
* **agent image** (``image="name"``, from ``agent.yaml``): an image that carries its own
  environment, as MLE-bench agents' images do. It must already be on the engine (built locally by
  the user or from the agent folder's Dockerfile by :func:`build_agent_image`); podium never pulls.

In both the container has no network at all (``network_mode=none``: only its own loopback); the
validation endpoint is a Unix socket bind-mounted into it. It runs as the run's agent id (as root: an
id no host account holds, :mod:`podium.sandbox._ids`; otherwise the harness's own) with every
capability dropped, ``no-new-privileges`` and podium's seccomp profile (:mod:`podium.sandbox._seccomp`,
the same policy as bwrap's), in its own pid, ipc, uts and mount namespaces, with ``--init`` as pid 1.
Its mounts come from the run's stage (:mod:`podium.sandbox._stage`), as under bwrap. Limits:
``mem_limit`` = ``memswap_limit`` (no swap), ``nano_cpus``, ``pids_limit``, ``shm_size``, GPUs by
``device_requests`` for the exact host indices.

The container sits in a parent cgroup ``podium/<run>`` of podium's own. At the wall limit every
process in that group is killed by podium directly (the engine is not needed for that), then the
container is killed and removed through the engine. If the engine stops answering during a run
(it died or was restarted), the run's processes are killed through the group at once and the run
ends with :class:`podium.errors.HarnessError`: it is the harness's failure, not the agent's.
Containers carry the label ``podium.harness=<host>:<pid>``; containers whose harness died (kill -9)
are removed the next time a Docker sandbox is opened on that host.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium import owner
from podium.errors import HarnessError, PodiumError
from podium.sandbox._cgroup import CGROUP_ROOT, RunCgroup, new_run_id
from podium.sandbox._disk import DiskWatch
from podium.sandbox._docker_config import HARNESS_LABEL, container_config, harness_id
from podium.sandbox._docker_images import build_agent_image, host_image
from podium.sandbox._docker_watch import (
    STOP_TIMEOUT_SECONDS,
    Waiter,
    briefly,
    cgroup_stats,
    engine_lost,
    kill_settled,
    pump,
    release,
    remove_run_groups,
    start_error,
    stats,
    stop,
    sweep_abandoned_groups,
)
from podium.sandbox._gpu import GpuMonitor
from podium.sandbox._limits import cpu_share, thread_env
from podium.sandbox._process import sample_of
from podium.sandbox._procfs import ProcView
from podium.sandbox._python import host_python
from podium.sandbox._stage import staged
from podium.sandbox._types import ExecResult, KilledFor, Limits, Mount, SampleLog, check_request

if TYPE_CHECKING:
    import docker

_SAMPLE_EVERY_SECONDS = 1.0
_FIRST_SAMPLE_SECONDS = 0.2
#: The FIFO a container reads a line from before its command starts (once its network was observed and its
#: loopback relays listen).
READY_FIFO = "/run/podium-ready"

ENGINE_HINT = (
    "Fix: start a Docker engine and point podium at it, e.g. "
    "`dockerd --data-root /var/lib/podium-docker -H unix:///run/podium-docker.sock &` then "
    "`export DOCKER_HOST=unix:///run/podium-docker.sock` (scripts/dockerd.sh does both), "
    "or choose --sandbox bwrap."
)


class DockerSandbox:
    """Runs the agent in a fresh container on a local Docker engine (see the module docstring)."""

    name = "docker"
    isolated = True

    def __init__(self, client: docker.DockerClient, image: str | None = None) -> None:
        self.client = client
        self.image = image
        self._host_tag: str | None = None

    @classmethod
    def find(cls, image: str | None = None) -> DockerSandbox:
        """Connect to the engine named by ``DOCKER_HOST`` (or the default socket) and check ``image`` is there."""
        try:
            import docker
        except ImportError:
            raise PodiumError(
                "The 'docker' sandbox needs the Docker SDK for Python. Fix: pip install 'podium[docker]' "
                "(or pip install docker)."
            ) from None
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            client = docker.from_env(timeout=120)
            client.ping()
        except Exception as error:  # the SDK raises DockerException, requests and OS errors alike
            raise PodiumError(f"No Docker engine answers at {where} ({error}). {ENGINE_HINT}") from None
        sandbox = cls(client, image)
        if image is not None:
            sandbox._check_image(image)
        remove_orphans(client)
        if sandbox._local_engine():
            sweep_abandoned_groups()
        return sandbox

    def _check_image(self, image: str) -> None:
        import docker

        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            raise PodiumError(
                f"Image {image!r} is not on this Docker engine, and podium never pulls images. Fix: build it here "
                f"(docker build -t {image} FOLDER), load it (docker load -i FILE.tar), or give the agent's "
                "agent.yaml a 'build:' folder with a Dockerfile that podium builds locally."
            ) from None

    # -- running -----------------------------------------------------------------------------------

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
        """Run ``command`` in a new container and wait for it to end; see the module docstring."""
        check_request(command, mounts, limits, workdir, logs=(stdout, stderr))
        python = host_python([*hidden, *(m.source for m in mounts if m.writable)]) if self.image is None else None
        run_id = new_run_id()
        # A parent group for accounting (Docker caps the container's own group): its counters outlive the
        # container's group, so the peak memory and CPU time of a run that ends within a second are known.
        # It carries the memory cap too, so what the runtime charges while starting the container counts.
        # Through it podium kills the run's processes without the engine.
        accounting = Limits(wall_seconds=1, memory_bytes=limits.memory_bytes, pids=None)
        group = RunCgroup.create(run_id, accounting) if self._local_engine() else None
        parent = f"/podium/{run_id}" if group is not None and "memory" in group.dirs else None
        relays = {m.loopback_port: m.source for m in mounts if m.loopback_port is not None}
        # the command waits on a FIFO until its network was observed and the relays listen (the image needs a /bin/sh)
        ready = owner.mkdtemp("r")
        ready.chmod(0o755)
        os.mkfifo(ready / "ready")
        os.chmod(ready / "ready", 0o666)  # read by the agent's id
        mounts = [*mounts, Mount(ready / "ready", READY_FIFO)]
        command = ["/bin/sh", "-c", f'read _ < {READY_FIFO}; exec "$@"', "podium", *command]
        try:
            with cpu_share(limits) as cpus, staged(mounts, limits, python.shown if python else []) as stage:
                view = ProcView(stage.etc_dir, cpus, limits.memory_bytes, stage.meminfo)
                config = self.create_config(
                    command,
                    mounts=stage.mounts,
                    env=thread_env(cpus, {**python.env, **env} if python else env),
                    limits=limits,
                    workdir=workdir,
                    user=f"{stage.uid}:{stage.gid}",
                    cgroup_parent=parent,
                    prefixes=stage.prefixes,
                    etc_dir=stage.etc_dir,
                    covers=python.covers if python else (),
                    cpuset=cpus,
                    generated=[*view.proc_binds(), *view.sys_binds()],
                )
                container = self._create(config)
                try:
                    result = self._run_created(
                        container,
                        limits,
                        stdout,
                        stderr,
                        group if parent else None,
                        stage.disk,
                        relays,
                        ready,
                        samples_file,
                        view,
                    )
                finally:
                    briefly(lambda: container.remove(force=True), STOP_TIMEOUT_SECONDS)
            result.warnings.extend([*(python.warnings if python else []), *stage.warnings])
            return result
        finally:
            if group is not None:
                remove_run_groups(run_id, group)
            shutil.rmtree(ready, ignore_errors=True)

    def _local_engine(self) -> bool:
        """Whether the engine runs on this host (a Unix socket), so its cgroups are ours to read."""
        return str(self.client.api.base_url).startswith("http+docker://") and os.access(CGROUP_ROOT, os.R_OK)

    def create_config(self, command: Sequence[str], **options: Any) -> dict[str, Any]:
        """The keyword arguments for ``containers.create`` (public so tests can check the isolation settings):
        :func:`podium.sandbox._docker_config.container_config` in this sandbox's image."""
        return container_config(self.image or self.host_image(), command, host=self.image is None, **options)

    def _create(self, config: dict[str, Any]) -> Any:
        import docker

        try:
            return self.client.containers.create(**config)
        except docker.errors.ImageNotFound:
            self._check_image(config["image"])
            raise
        except docker.errors.APIError as error:
            raise PodiumError(f"Docker refused to create the run's container: {error.explanation or error}") from None

    def _run_created(
        self,
        container: Any,
        limits: Limits,
        stdout: Path,
        stderr: Path,
        group: RunCgroup | None,
        disk: DiskWatch | None = None,
        relays: Mapping[int, Path] | None = None,
        ready: Path | None = None,
        samples_file: Path | None = None,
        view: ProcView | None = None,
    ) -> ExecResult:
        import docker

        with open(stdout, "wb") as out, open(stderr, "wb") as err, contextlib.ExitStack() as held:
            try:
                stream = self.client.api.attach(
                    container.id, stdout=True, stderr=True, stream=True, logs=True, demux=True
                )
            except Exception as error:  # nothing runs yet: the engine is gone or refused to attach
                raise HarnessError(
                    f"the Docker engine did not attach to the run's container ({type(error).__name__}: {error}); "
                    "nothing of the run started. This is the harness's failure, not the agent's: restart the "
                    "engine (scripts/dockerd.sh) and rerun"
                ) from None
            pumping = threading.Thread(target=pump, args=(stream, out, err), daemon=True)
            pumping.start()
            try:
                container.start()
            except docker.errors.APIError as error:
                raise PodiumError(start_error(error, limits)) from None
            except Exception as error:  # no answer at all: the engine died while starting the container
                emptied = kill_settled(group) if group is not None else False
                raise HarnessError(engine_lost(0, f"{type(error).__name__}: {error}", emptied)) from None
            network = release(container, relays or {}, ready, held)
            started = time.monotonic()
            waiter = Waiter(container)
            waiter.start()
            live = SampleLog(live=samples_file)
            try:
                samples, peak, stopped_for = self._watch(
                    container, limits, started, waiter.done, group, disk, live, view
                )
            finally:
                live.close()
            seconds = time.monotonic() - started
            if stopped_for is not None or waiter.lost is not None:
                emptied = stop(container, group, waiter)
            pumping.join(STOP_TIMEOUT_SECONDS)
        if waiter.lost is not None:
            raise HarnessError(engine_lost(seconds, waiter.lost, group is not None and emptied))
        if stopped_for is None:
            try:
                container.reload()
            except Exception as error:  # the engine went away just as the container ended
                raise HarnessError(
                    f"the Docker engine did not say how the run's container ended ({error}); the run is not the "
                    "agent's failure: rerun it"
                ) from None
        state = container.attrs["State"]
        oom = bool(state.get("OOMKilled")) and stopped_for is None
        if group is not None:
            peak = group.peak_memory_bytes() or peak
        killed_for: KilledFor | None = stopped_for or ("memory" if oom else None)
        return ExecResult(
            exit_code=None if stopped_for else int(state.get("ExitCode", -1)),
            timed_out=stopped_for == "time",
            killed_for=killed_for,
            seconds=seconds,
            peak_memory_bytes=peak,
            samples=list(samples),
            warnings=[],
            cpu_seconds=group.cpu_seconds() if group is not None else (samples[-1].cpu_seconds if samples else None),
            network=network,
        )

    def _watch(
        self,
        container: Any,
        limits: Limits,
        started: float,
        exited: threading.Event,
        group: RunCgroup | None,
        disk: DiskWatch | None,
        samples: SampleLog,
        view: ProcView | None = None,
    ) -> tuple[SampleLog, int | None, KilledFor | None]:
        """Sample until the container exits (or the engine is lost) or a limit passes; (samples, peak memory,
        the limit that passed)."""
        gpus = GpuMonitor(limits.gpus) if limits.gpus else None
        peak: int | None = None
        next_sample = _FIRST_SAMPLE_SECONDS
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= limits.wall_seconds:
                return samples, peak, "time"
            if elapsed >= next_sample:
                reading = cgroup_stats(group) if group is not None else stats(container)
                if reading is not None:
                    cpu, rss, max_usage = reading
                    samples.add(sample_of(elapsed, (cpu, rss), gpus))
                    peak = max(peak or 0, rss, max_usage or 0)
                if view is not None:  # the run's /proc/stat and meminfo, current
                    view.refresh(reading[1] if reading is not None else None)
                next_sample = (next_sample // _SAMPLE_EVERY_SECONDS + 1) * _SAMPLE_EVERY_SECONDS
                if disk is not None and disk.over(elapsed):
                    return samples, peak, "disk"
            if exited.wait(max(0.0, min(next_sample, limits.wall_seconds) - elapsed)):
                return samples, peak, None

    def host_image(self) -> str:
        """The tag of the host image for this host's layout, built now if the engine lacks it."""
        if self._host_tag is None:
            self._host_tag = host_image(self.client)
        return self._host_tag

    def build(self, folder: Path, tag: str, build_args: Mapping[str, str] | None = None) -> str:
        """Build an agent's image from ``folder``'s Dockerfile on this engine (see :func:`build_agent_image`)."""
        return build_agent_image(self.client, folder, tag, build_args)

    def kill_own(self) -> None:
        """Kill every container this podium process started (a batch's Ctrl-C)."""
        for container in self.client.containers.list(filters={"label": f"{HARNESS_LABEL}={harness_id()}"}):
            with contextlib.suppress(Exception):
                container.kill()


def remove_orphans(client: docker.DockerClient) -> list[str]:
    """Remove containers this host's podium processes left behind when they were killed."""
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": HARNESS_LABEL}):
        owner = container.labels.get(HARNESS_LABEL, "")
        owner_host, _, pid = owner.rpartition(":")
        if owner_host != host or not pid.isdigit() or _pid_exists(int(pid)):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.id)
    return removed


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

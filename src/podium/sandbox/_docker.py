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
import hashlib
import io
import os
import socket
import tarfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.errors import HarnessError, PodiumError
from podium.sandbox import _seccomp
from podium.sandbox._bwrap import ETC_ENTRIES, SYSTEM_DIRS, default_env, python_prefixes
from podium.sandbox._cgroup import CGROUP_ROOT, RunCgroup, new_run_id, remove_abandoned
from podium.sandbox._disk import DiskWatch
from podium.sandbox._gpu import GpuMonitor
from podium.sandbox._process import sample_of
from podium.sandbox._stage import HOME, HOSTNAME, staged
from podium.sandbox._types import ExecResult, KilledFor, Limits, Mount, SampleLog, check_request

if TYPE_CHECKING:
    import docker

HOST_IMAGE_REPOSITORY = "podium-host"
HARNESS_LABEL = "podium.harness"
DEFAULT_SHM_BYTES = 2 << 30
_SAMPLE_EVERY_SECONDS = 1.0
_FIRST_SAMPLE_SECONDS = 0.2
_STOP_TIMEOUT_SECONDS = 30
_NOBODY = 65534

ENGINE_HINT = (
    "Fix: start a Docker engine and point podium at it, e.g. "
    "`dockerd --data-root /var/lib/podium-docker -H unix:///run/podium-docker.sock &` then "
    "`export DOCKER_HOST=unix:///run/podium-docker.sock` (scripts/dockerd.sh does both), "
    "or choose --sandbox bwrap."
)

# The host image's own; each run binds its generated passwd and group (with the run's agent id) over them.
_PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


def _harness_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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
            _sweep_abandoned_groups()
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
    ) -> ExecResult:
        """Run ``command`` in a new container and wait for it to end; see the module docstring."""
        check_request(command, mounts, limits, workdir, logs=(stdout, stderr))
        run_id = new_run_id()
        # A parent group for accounting (Docker caps the container's own group): its counters outlive the
        # container's group, so the peak memory and CPU time of a run that ends within a second are known.
        # It carries the memory cap too, so what the runtime charges while starting the container counts.
        # Through it podium kills the run's processes without the engine.
        accounting = Limits(wall_seconds=1, memory_bytes=limits.memory_bytes, pids=None)
        group = RunCgroup.create(run_id, accounting) if self._local_engine() else None
        parent = f"/podium/{run_id}" if group is not None and "memory" in group.dirs else None
        try:
            with staged(mounts, limits, python_prefixes() if self.image is None else []) as stage:
                config = self.create_config(
                    command,
                    mounts=stage.mounts,
                    env=env,
                    limits=limits,
                    workdir=workdir,
                    user=f"{stage.uid}:{stage.gid}",
                    cgroup_parent=parent,
                    prefixes=stage.prefixes,
                    etc_dir=stage.etc_dir,
                )
                container = self._create(config)
                try:
                    result = self._run_created(container, limits, stdout, stderr, group if parent else None, stage.disk)
                finally:
                    _briefly(lambda: container.remove(force=True), _STOP_TIMEOUT_SECONDS)
            result.warnings.extend(stage.warnings)
            return result
        finally:
            if group is not None:
                _remove_run_groups(run_id, group)

    def _local_engine(self) -> bool:
        """Whether the engine runs on this host (a Unix socket), so its cgroups are ours to read."""
        return str(self.client.api.base_url).startswith("http+docker://") and os.access(CGROUP_ROOT, os.R_OK)

    def create_config(
        self,
        command: Sequence[str],
        *,
        mounts: Sequence[Mount],
        env: Mapping[str, str],
        limits: Limits,
        workdir: str,
        user: str,
        cgroup_parent: str | None = None,
        prefixes: Sequence[tuple[str, str]] | None = None,
        etc_dir: Path | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments for ``containers.create`` (public so tests can check the isolation settings).

        ``prefixes`` are the (source, target) folders of the Python installation (default: this one's, bound
        as they are); ``etc_dir`` holds the run's generated passwd and group, bound over the host image's.
        """
        from docker.types import DeviceRequest, LogConfig
        from docker.types import Mount as DockerMount

        host = self.image is None
        binds: list[DockerMount] = []
        if host:
            for path in SYSTEM_DIRS:
                if os.path.isdir(path) and not os.path.islink(path) and path != "/sbin":
                    binds.append(DockerMount(path, path, type="bind", read_only=True))
            for name in ETC_ENTRIES:
                if os.path.exists(f"/etc/{name}"):
                    binds.append(
                        DockerMount(f"/etc/{name}", os.path.realpath(f"/etc/{name}"), type="bind", read_only=True)
                    )
            for source, target in prefixes if prefixes is not None else [(p, p) for p in python_prefixes()]:
                binds.append(DockerMount(target, source, type="bind", read_only=True))
            if etc_dir is not None:
                for name in ("passwd", "group"):
                    binds.append(DockerMount(f"/etc/{name}", str(etc_dir / name), type="bind", read_only=True))
        for mount in mounts:
            binds.append(
                DockerMount(mount.target, str(mount.source.resolve()), type="bind", read_only=not mount.writable)
            )
        memory = limits.memory_bytes
        tmpfs = {"/tmp": "rw,nosuid,nodev"}
        if host:
            tmpfs[HOME] = "rw,nosuid,nodev,mode=1777"
        if not limits.gpus:  # as under bwrap, the host's hardware details stay hidden (GPU stacks may read /sys)
            tmpfs["/sys"] = "ro,nosuid,nodev,noexec,size=4k"
        config: dict[str, Any] = {
            "image": self.image or self.host_image(),
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
            "labels": {HARNESS_LABEL: _harness_id()},
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
        if limits.gpus:
            config["device_requests"] = [
                DeviceRequest(device_ids=[str(i) for i in limits.gpus], capabilities=[["gpu"]], driver="nvidia")
            ]
        return config

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
    ) -> ExecResult:
        import docker

        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            stream = self.client.api.attach(container.id, stdout=True, stderr=True, stream=True, logs=True, demux=True)
            pump = threading.Thread(target=_pump, args=(stream, out, err), daemon=True)
            pump.start()
            try:
                container.start()
            except docker.errors.APIError as error:
                raise PodiumError(_start_error(error, limits)) from None
            started = time.monotonic()
            waiter = _Waiter(container)
            waiter.start()
            samples, peak, stopped_for = self._watch(container, limits, started, waiter.done, group, disk)
            seconds = time.monotonic() - started
            if stopped_for is not None or waiter.lost is not None:
                emptied = _stop(container, group, waiter)
            pump.join(_STOP_TIMEOUT_SECONDS)
        if waiter.lost is not None:
            raise HarnessError(_engine_lost(seconds, waiter.lost, group is not None and emptied))
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
        )

    def _watch(
        self,
        container: Any,
        limits: Limits,
        started: float,
        exited: threading.Event,
        group: RunCgroup | None,
        disk: DiskWatch | None,
    ) -> tuple[SampleLog, int | None, KilledFor | None]:
        """Sample until the container exits (or the engine is lost) or a limit passes; (samples, peak memory,
        the limit that passed)."""
        gpus = GpuMonitor(limits.gpus) if limits.gpus else None
        samples = SampleLog()
        peak: int | None = None
        next_sample = _FIRST_SAMPLE_SECONDS
        while True:
            elapsed = time.monotonic() - started
            if elapsed >= limits.wall_seconds:
                return samples, peak, "time"
            if elapsed >= next_sample:
                reading = _cgroup_stats(group) if group is not None else _stats(container)
                if reading is not None:
                    cpu, rss, max_usage = reading
                    samples.add(sample_of(elapsed, (cpu, rss), gpus))
                    peak = max(peak or 0, rss, max_usage or 0)
                next_sample = (next_sample // _SAMPLE_EVERY_SECONDS + 1) * _SAMPLE_EVERY_SECONDS
                if disk is not None and disk.over(elapsed):
                    return samples, peak, "disk"
            if exited.wait(max(0.0, min(next_sample, limits.wall_seconds) - elapsed)):
                return samples, peak, None

    # -- images ------------------------------------------------------------------------------------

    def host_image(self) -> str:
        """The tag of the host image for this host's layout, built now if the engine lacks it."""
        import docker

        if self._host_tag is not None:
            return self._host_tag
        context = _host_image_context()
        tag = f"{HOST_IMAGE_REPOSITORY}:{hashlib.sha256(context).hexdigest()[:12]}"
        try:
            self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            self.client.images.build(
                fileobj=io.BytesIO(context), custom_context=True, tag=tag, pull=False, rm=True, forcerm=True
            )
        self._host_tag = tag
        return tag


def build_agent_image(client: docker.DockerClient, folder: Path, tag: str) -> str:
    """Build the agent's image from ``folder`` (its Dockerfile) on the local engine, never pulling a base."""
    import docker

    dockerfile = folder / "Dockerfile"
    if not dockerfile.is_file():
        raise PodiumError(f"agent build folder {folder} has no Dockerfile. Fix: add one, or point 'build:' elsewhere.")
    # The engine pulls a missing base image even with pull=False; podium never pulls, so check first.
    for base in base_images(dockerfile.read_text(encoding="utf-8")):
        try:
            client.images.get(base)
        except docker.errors.ImageNotFound:
            raise PodiumError(
                f"{dockerfile} starts FROM {base!r}, which is not on this Docker engine, and podium never pulls "
                f"images. Fix: build or load it here first (docker load -i FILE.tar), or start FROM scratch."
            ) from None
    try:
        client.images.build(path=str(folder), tag=tag, pull=False, rm=True, forcerm=True)
    except docker.errors.BuildError as error:
        log = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in error.build_log)
        raise PodiumError(f"building the agent image {tag} from {folder} failed: {error.msg}\n{log[-2000:]}") from None
    return tag


def base_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile builds FROM, other than ``scratch`` and its own earlier stages."""
    stages: set[str] = set()
    bases: list[str] = []
    lines = dockerfile.replace("\\\n", " ").splitlines()
    for line in lines:
        words = line.split()
        if not words or words[0].upper() != "FROM":
            continue
        words = [w for w in words[1:] if not w.startswith("--")]  # --platform=...
        if not words:
            raise PodiumError(f"cannot read the Dockerfile line {line.strip()!r}: FROM names no image")
        image = words[0]
        if len(words) >= 3 and words[1].upper() == "AS":
            stages.add(words[2].lower())
        if "$" in image:
            raise PodiumError(
                f"the Dockerfile line {line.strip()!r} names its base image through a build argument; podium "
                "checks that every base image is already on the engine (it never pulls), so write the name out"
            )
        if image.lower() != "scratch" and image.lower() not in stages and image not in bases:
            bases.append(image)
    return bases


def remove_orphans(client: docker.DockerClient) -> list[str]:
    """Remove containers this host's podium processes left behind when they were killed."""
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": HARNESS_LABEL}):
        owner = container.labels.get(HARNESS_LABEL, "")
        owner_host, _, pid = owner.rpartition(":")
        if owner_host != host or not pid.isdigit() or _alive(int(pid)):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(container.id)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _host_image_context() -> bytes:
    """A build context (tar) for the host image: a Dockerfile and a tiny root with passwd, group, symlinks."""
    dockerfile = f"FROM scratch\nCOPY rootfs/ /\nUSER {_NOBODY}:{_NOBODY}\nWORKDIR {HOME}\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:

        def add(
            name: str, data: bytes | None = None, *, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
        ) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime, info.linkname = kind, mode, 0, link
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

        add("Dockerfile", dockerfile.encode())
        for folder in ("rootfs", "rootfs/etc", "rootfs/tmp", "rootfs/home", "rootfs/proc", "rootfs/dev", "rootfs/sys"):
            add(folder, kind=tarfile.DIRTYPE, mode=0o1777 if folder == "rootfs/tmp" else 0o755)
        add("rootfs/etc/passwd", _PASSWD.encode())
        add("rootfs/etc/group", _GROUP.encode())
        # merged /usr: /bin -> usr/bin and so on, as on this host. /sbin stays a real (empty) folder: Docker
        # mounts its init at /sbin/docker-init, which cannot be created inside the read-only /usr/sbin.
        add("rootfs/sbin", kind=tarfile.DIRTYPE, mode=0o755)
        for path in SYSTEM_DIRS:
            if os.path.islink(path) and path != "/sbin":
                add(f"rootfs{path}", kind=tarfile.SYMTYPE, link=os.readlink(path), mode=0o777)
    return buffer.getvalue()


def _pump(stream: Iterator[tuple[bytes | None, bytes | None]], out: Any, err: Any) -> None:
    """Copy the container's demultiplexed output into the two log files as it arrives."""
    with contextlib.suppress(Exception):
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.write(chunk_out)
                out.flush()
            if chunk_err:
                err.write(chunk_err)
                err.flush()


class _Waiter(threading.Thread):
    """Waits for the container to end; ``lost`` says why if the engine stopped answering first."""

    def __init__(self, container: Any) -> None:
        super().__init__(name="podium-docker-wait", daemon=True)
        self.container = container
        self.done = threading.Event()
        self.lost: str | None = None

    def run(self) -> None:
        try:
            while True:
                try:
                    self.container.wait(timeout=3600)
                    return
                except Exception as error:  # a read timeout on a long run: keep waiting; anything else: lost
                    if "timed out" not in str(error).lower():
                        self.lost = f"{type(error).__name__}: {error}"
                        return
        finally:
            self.done.set()


def _stop(container: Any, group: RunCgroup | None, waiter: _Waiter) -> bool:
    """End the run's processes: through its cgroup (needs no engine), then through the engine if it answers.
    Whether the run's cgroup is known to be empty now."""
    emptied = group.kill_all() if group is not None else False
    if waiter.lost is None:
        _briefly(container.kill, 10)
    waiter.done.wait(_STOP_TIMEOUT_SECONDS)
    return emptied


def _briefly(call: Any, seconds: float) -> None:
    """Call ``call`` (an engine request), ignoring its errors, waiting for it at most ``seconds`` (a hung engine)."""

    def quietly() -> None:
        with contextlib.suppress(Exception):
            call()

    thread = threading.Thread(target=quietly, name="podium-docker-call", daemon=True)
    thread.start()
    thread.join(seconds)


def _engine_lost(seconds: float, why: str, killed: bool) -> str:
    outcome = (
        "its processes were killed through the run's cgroup"
        if killed
        else "podium could not kill its processes without the engine (no local cgroup): the container may still run"
    )
    return (
        f"the Docker engine stopped answering {seconds:.0f} s into the run ({why}); {outcome}. This is the "
        "harness's failure, not the agent's: restart the engine (scripts/dockerd.sh) and rerun"
    )


def _seccomp_option() -> list[str]:
    """podium's seccomp profile for the container (the same policy as bwrap's), where it has a table."""
    return [f"seccomp={_seccomp.docker_profile()}"] if _seccomp.supported() else []


def _stats(container: Any) -> tuple[float, int, int | None] | None:
    """CPU seconds, memory in use and peak memory (cgroup v1) of a running container, or None."""
    try:
        stats = container.stats(stream=False, one_shot=True)
    except Exception:
        return None
    cpu_ns = (stats.get("cpu_stats") or {}).get("cpu_usage", {}).get("total_usage")
    memory = stats.get("memory_stats") or {}
    if cpu_ns is None or "usage" not in memory:
        return None
    return cpu_ns / 1e9, int(memory["usage"]), memory.get("max_usage")


def _cgroup_stats(group: RunCgroup) -> tuple[float, int, int | None] | None:
    cpu, memory = group.cpu_seconds(), group.memory_bytes()
    if cpu is None or memory is None:
        return None
    return cpu, memory, group.peak_memory_bytes()


def _sweep_abandoned_groups() -> None:
    """Empty ``podium/<run>`` parent groups of killed harnesses, in every hierarchy the runtime filled."""
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            if (hierarchy / "cgroup.procs").is_file():
                remove_abandoned(hierarchy / "podium")


def _remove_run_groups(run_id: str, group: RunCgroup) -> None:
    """Remove the run's parent groups: podium's own and those the runtime made in the other controllers."""
    group.remove()
    with contextlib.suppress(OSError):
        for hierarchy in CGROUP_ROOT.iterdir():
            path = hierarchy / "podium" / run_id
            if path.is_dir() and not path.is_symlink():
                with contextlib.suppress(OSError):
                    for child in sorted(path.iterdir(), reverse=True):
                        if child.is_dir():
                            child.rmdir()
                    path.rmdir()


def _start_error(error: Any, limits: Limits) -> str:
    text = str(getattr(error, "explanation", None) or error)
    if limits.gpus and ("device driver" in text or "gpu" in text.lower()):
        return (
            f"Docker could not give the container GPU(s) {list(limits.gpus)}: {text}. Fix: install the NVIDIA "
            "Container Toolkit on this host and register it with the engine (nvidia-ctk runtime configure "
            "--runtime=docker, then restart dockerd), or run with --gpus 0."
        )
    return f"Docker could not start the run's container: {text}"

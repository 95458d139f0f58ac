"""The Docker sandbox's images: the host image podium builds itself, and agents' images built from their folders.

* The **host image** ``podium-host:<hash>`` is built locally ``FROM scratch`` out of a few generated
  files (``/etc/passwd``, ``/etc/group``, the merged-/usr symlinks of this host); at run time the
  host's system and Python are bind-mounted into it read-only, as bwrap shows them.
* A **root-filesystem image** ``podium-rootfs:<environment folder>`` is a root-filesystem environment
  (:mod:`podium.environments.rootfs`) imported as it is (``docker import`` of its folder), once.
* An **agent image** is built from the agent folder's Dockerfile on the local engine. The engine
  pulls a missing base image even when told not to, so every ``FROM`` is checked to be on the
  engine first: podium never pulls.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from podium.errors import PodiumError
from podium.sandbox._python import SYSTEM_DIRS
from podium.sandbox._stage import HOME

if TYPE_CHECKING:
    import docker

__all__ = [
    "HOST_IMAGE_REPOSITORY",
    "ROOTFS_REPOSITORY",
    "base_images",
    "build_agent_image",
    "host_image",
    "rootfs_image",
]

HOST_IMAGE_REPOSITORY = "podium-host"
ROOTFS_REPOSITORY = "podium-rootfs"
_NOBODY = 65534
# The host image's own; each run binds its generated passwd and group (with the run's agent id) over them.
_PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


def host_image(client: docker.DockerClient) -> str:
    """The tag of the host image for this host's layout, built now if the engine lacks it."""
    import docker

    context = _host_image_context()
    tag = f"{HOST_IMAGE_REPOSITORY}:{hashlib.sha256(context).hexdigest()[:12]}"
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        client.images.build(
            fileobj=io.BytesIO(context), custom_context=True, tag=tag, pull=False, rm=True, forcerm=True
        )
    return tag


def rootfs_image(client: docker.DockerClient, root: Path) -> str:
    """The root filesystem ``root`` (an environment's ``rootfs/``) as a local image, imported now if the
    engine lacks it; tagged by the environment's folder, whose name carries its digest."""
    import docker

    tag = f"{ROOTFS_REPOSITORY}:{root.parent.name}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE) as tar:
        assert tar.stdout is not None
        client.api.import_image_from_stream(tar.stdout, repository=ROOTFS_REPOSITORY, tag=root.parent.name)
    if tar.returncode != 0:
        raise PodiumError(f"tar of {root} failed ({tar.returncode}); the image {tag} was not imported")
    client.images.get(tag)
    return tag


def build_agent_image(
    client: docker.DockerClient, folder: Path, tag: str, build_args: Mapping[str, str] | None = None
) -> str:
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
        client.images.build(
            path=str(folder), tag=tag, pull=False, rm=True, forcerm=True, buildargs=dict(build_args or {})
        )
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

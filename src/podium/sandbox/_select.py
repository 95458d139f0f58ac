"""Which sandbox runs a run: :func:`get_sandbox` by name, checked to work on this machine, and the agent images the
docker sandbox builds (:func:`build_agent_image`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

from podium.errors import PodiumError
from podium.sandbox._bwrap import BwrapSandbox
from podium.sandbox._local import LocalSandbox
from podium.sandbox._types import Sandbox

__all__ = ["SANDBOXES", "build_agent_image", "get_sandbox"]

SANDBOXES = ("bwrap", "docker", "local")


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

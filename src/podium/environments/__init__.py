"""Agent environments: the Python an agent's own code runs with, apart from podium's.

An environment is a virtualenv built from a *profile*, a pinned requirements list
(``podium/environments/profiles/<name>.txt``, or any file of that format): ``minimal`` (tabular ML
on the CPU, what CI can afford) or ``standard`` (what MLE-bench's agent image offers for Python:
gradient boosting, PyTorch, vision and text libraries). It is built once into a cache folder named
by its *digest*, a hash of the requirements, the Python that builds it and the machine, so the same
profile on the same machine is the same environment, and a changed pin is a new one. Each keeps
``podium-env.json``: its profile, requirements, the lock (``pip freeze`` of what was installed),
Python, size and build time.

A *rootfs profile* (``profiles/<name>.yaml``: ``openhands``) is a whole Debian system instead, for an
agent whose Python is not the host's (:mod:`podium.environments.rootfs`); the sandbox mounts it as
``/``, read-only, and the code environment inside it sits at :data:`ENV_MOUNT` as usual.

Inside a sandbox it is mounted read-only at :data:`ENV_MOUNT` and put first on ``PATH``, whatever
path podium itself lives at; its interpreter is the host's (bwrap and docker's host image mount
that read-only), and its scripts are rewritten to start from the mounted path. The run record
names the environment's digest, so results say what the agent's code ran with.

A build is staged in a folder of its own and renamed into place only when pip has finished and the
lock is written, so an interrupted build leaves nothing that looks ready; a later build removes the
leftovers of dead builders. Building needs the package index (PyPI or a local mirror); a run never
does: ``podium run`` builds a missing environment before the batch starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from podium.lazy import exports

if TYPE_CHECKING:
    from podium.environments.builder import build, ensure
    from podium.environments.profile import ENV_MOUNT, NO_DEPS, PROFILES, Profile, load_profile
    from podium.environments.store import Environment, env_root, find, list_environments, remove

_BUILDER, _PROFILE, _STORE = "podium.environments.builder", "podium.environments.profile", "podium.environments.store"
#: Where each name lives, loaded on first use: the command line's parser names the profiles without the builder.
_WHERE = {
    "build": _BUILDER, "ensure": _BUILDER, "ENV_MOUNT": _PROFILE, "NO_DEPS": _PROFILE, "PROFILES": _PROFILE,
    "Profile": _PROFILE, "load_profile": _PROFILE, "Environment": _STORE, "env_root": _STORE, "find": _STORE,
    "list_environments": _STORE, "remove": _STORE,
}  # fmt: skip
__getattr__, __dir__ = exports(__name__, globals(), _WHERE)

__all__ = [
    "ENV_MOUNT",
    "NO_DEPS",
    "PROFILES",
    "Environment",
    "Profile",
    "build",
    "ensure",
    "env_root",
    "find",
    "list_environments",
    "load_profile",
    "remove",
]

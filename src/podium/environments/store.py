"""Built environments on disk: where they live (``$PODIUM_ENV_DIR`` or the user cache), the record each keeps
(``podium-env.json``), finding, listing and removing them, and sweeping the staging folders of dead builders."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium import owner
from podium.environments.profile import Profile
from podium.errors import UsageError

__all__ = ["Environment", "env_root", "find", "list_environments", "remove"]

_RECORD = "podium-env.json"


@dataclass(frozen=True)
class Environment:
    """A built environment (what ``podium-env.json`` in its folder says)."""

    name: str
    digest: str
    path: Path
    requirements: tuple[str, ...]
    lock: tuple[str, ...]
    python: str
    gpu: bool
    created_at: str
    size_bytes: int
    rootfs: bool = False  # a whole system at path/rootfs, mounted as the sandbox's /
    build_seconds: float | None = None

    @property
    def python_path(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def root(self) -> Path | None:
        """The root filesystem a sandbox mounts as ``/`` (a rootfs environment), else None."""
        return self.path / "rootfs" if self.rootfs else None

    def summary(self) -> dict[str, Any]:
        """What a run record keeps of it."""
        kept = {"name": self.name, "digest": self.digest, "gpu": self.gpu, "python": self.python}
        return kept | ({"rootfs": True} if self.rootfs else {})


def env_root() -> Path:
    """Where environments are built: ``$PODIUM_ENV_DIR``, else the user cache dir."""
    if env := os.environ.get("PODIUM_ENV_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "envs"


def _read(folder: Path) -> Environment | None:
    try:
        data = json.loads((folder / _RECORD).read_text(encoding="utf-8"))
        return Environment(
            **{**data, "path": folder, "requirements": tuple(data["requirements"]), "lock": tuple(data["lock"])}
        )
    except (OSError, ValueError, TypeError, KeyError):
        return None


def find(profile: Profile, root: Path | None = None) -> Environment | None:
    """The built environment of ``profile``, or None."""
    return _read((root or env_root()) / profile.folder_name)


def list_environments(root: Path | None = None) -> list[Environment]:
    """Every built environment, by name."""
    base = root or env_root()
    if not base.is_dir():
        return []
    found = [_read(p) for p in sorted(base.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    return [e for e in found if e is not None]


def remove(name_or_digest: str, root: Path | None = None) -> list[Environment]:
    """Remove the environments whose name, folder or digest (a prefix of 4+ characters) matches."""
    matches = [
        e
        for e in list_environments(root)
        if name_or_digest in (e.name, e.path.name) or (len(name_or_digest) >= 4 and e.digest.startswith(name_or_digest))
    ]
    if not matches:
        raise UsageError(f"no environment {name_or_digest!r}; `podium env list` shows them")
    for env in matches:
        shutil.rmtree(env.path)
    return matches


def _sweep(base: Path) -> None:
    """Remove the staging folders of builds whose builder is gone."""
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            token = owner.token_in(entry.name) if entry.name.startswith(".") else None
            if token is not None and ".tmp-" in entry.name and not owner.alive(token):
                shutil.rmtree(entry, ignore_errors=True)

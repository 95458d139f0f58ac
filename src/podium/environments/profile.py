"""Environment profiles: a pinned requirements list (``profiles/<name>.txt``, or any file of that format; a
``-gpu`` variant; lines marked ``# no-deps``) or a rootfs profile (``profiles/<name>.yaml``), read and checked,
and the digest that names the environment a profile builds (see :mod:`podium.environments`)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from podium.errors import UsageError

if TYPE_CHECKING:
    from podium.environments.rootfs import RootfsSpec

__all__ = ["ENV_MOUNT", "NO_DEPS", "PROFILES", "Profile", "load_profile"]

#: Where an environment is mounted inside every sandbox.
ENV_MOUNT = "/opt/podium/env"
#: The profiles shipped with podium.
PROFILES = ("minimal", "standard", "openhands", "coding-agents")
_PROFILE_DIR = Path(__file__).resolve().parent / "profiles"


@dataclass(frozen=True)
class Profile:
    """A pinned requirements list, and whether it is a profile's GPU variant."""

    name: str
    requirements: tuple[str, ...]
    gpu: bool = False
    rootfs: RootfsSpec | None = None  # a whole system (a rootfs profile), not a virtualenv of the host's Python

    @property
    def digest(self) -> str:
        """What makes two environments the same: requirements, building Python, machine (for a root
        filesystem: its suite, packages and pins, and the machine)."""
        if self.rootfs is not None:
            spec = {**asdict(self.rootfs), "machine": platform.machine(), "format": 1}
            if not self.rootfs.npm_prefix:  # a profile without Node packages keeps the digest it had before them
                del spec["npm_prefix"], spec["npm_packages"]
            return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        key = {
            "requirements": sorted(self.requirements),
            "gpu": self.gpu,
            "python": platform.python_version(),
            "implementation": sys.implementation.name,
            "base": os.path.realpath(sys.base_prefix),
            "machine": platform.machine(),
        }
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def folder_name(self) -> str:
        return f"{self.name}{'-gpu' if self.gpu else ''}-{self.digest[:12]}"


#: A requirement whose line ends with this comment is installed without its dependencies (a package
#: whose own pins the profile replaces, e.g. aideml's).
NO_DEPS = "# no-deps"


def _read_requirements(path: Path) -> tuple[str, ...]:
    lines = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        if comment.strip() == NO_DEPS[1:].strip():
            line += f"  {NO_DEPS}"
        if line.startswith("-"):
            raise UsageError(
                f"{path}:{number}: pip options ({line.split()[0]}) are not allowed in a profile; list packages"
            )
        lines.append(line)
    return tuple(lines)


def load_profile(name_or_path: str, *, gpu: bool = False, extra: Sequence[str] = ()) -> Profile:
    """A shipped profile by name (``minimal``, ``standard``; ``gpu`` takes its ``-gpu`` variant) or a
    requirements file by path; ``extra`` requirements are added (an agent's own)."""
    path = Path(name_or_path)
    if path.suffix == ".yaml" or (name_or_path in PROFILES and (_PROFILE_DIR / f"{name_or_path}.yaml").is_file()):
        return _load_rootfs_profile(path if path.suffix == ".yaml" else _PROFILE_DIR / f"{name_or_path}.yaml", gpu)
    if path.suffix == ".txt" or os.sep in name_or_path:
        if not path.is_file():
            raise UsageError(f"environment profile {name_or_path!r}: no such file. Fix: give a requirements file")
        name = path.stem
    else:
        if name_or_path not in PROFILES:
            raise UsageError(
                f"unknown environment profile {name_or_path!r}; the profiles are {', '.join(PROFILES)}, or a .txt file"
            )
        name = name_or_path
        path = _PROFILE_DIR / f"{name}{'-gpu' if gpu else ''}.txt"
        if gpu and not path.is_file():
            raise UsageError(f"profile {name!r} has no GPU variant (it runs on the CPU). Fix: drop --gpu")
    requirements = _read_requirements(path) + tuple(extra)
    if not requirements:
        raise UsageError(f"environment profile {path} lists no package")
    return Profile(name, requirements, gpu)


def _load_rootfs_profile(path: Path, gpu: bool) -> Profile:
    import yaml

    if gpu:
        raise UsageError(f"profile {path.stem!r} has no GPU variant. Fix: drop --gpu")
    if not path.is_file():
        raise UsageError(f"environment profile {path}: no such file. Fix: give a rootfs profile (.yaml)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    from podium.environments.rootfs import parse_rootfs_profile

    spec = parse_rootfs_profile(path, raw, _read_requirements(_PROFILE_DIR / "minimal.txt"))
    return Profile(path.stem, spec.agent_requirements + spec.code_requirements, rootfs=spec)

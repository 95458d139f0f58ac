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

import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from podium import owner
from podium.environments.rootfs import RootfsSpec, build_rootfs, parse_rootfs_profile
from podium.errors import PodiumError, UsageError

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

#: Where an environment is mounted inside every sandbox.
ENV_MOUNT = "/opt/podium/env"
#: The profiles shipped with podium.
PROFILES = ("minimal", "standard", "openhands", "coding-agents")
_RECORD = "podium-env.json"
_PROFILE_DIR = Path(str(resources.files("podium") / "environments" / "profiles"))


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
    spec = parse_rootfs_profile(path, raw, _read_requirements(_PROFILE_DIR / "minimal.txt"))
    return Profile(path.stem, spec.agent_requirements + spec.code_requirements, rootfs=spec)


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


#: Variables of the caller's Python that must not reach the environment's interpreter.
_CALLERS_PYTHON = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH")


def _pip(python: Path, *args: str, log: Path | None = None, progress: Callable[[str], None] | None = None) -> str:
    """Run podium's pip against the environment's interpreter; its output (logged), or a PodiumError."""
    command = [sys.executable, "-m", "pip", "--python", str(python), *args]
    out: list[str] = []
    # pip settings (an index mirror, a proxy) pass on; the caller's Python path does not: under --python pip runs in
    # the environment's interpreter, which would otherwise see (and pip check) the packages on the caller's PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k not in _CALLERS_PYTHON}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**env, "PIP_NO_INPUT": "1"}
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            out.append(line)
            if progress is not None:
                progress(line.rstrip())
    text = "".join(out)
    if log is not None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"$ {' '.join(command)}\n{text}\n")
    if process.returncode != 0:
        tail = "\n".join(text.strip().splitlines()[-8:])
        raise PodiumError(f"pip failed ({process.returncode}) building the environment:\n{tail}")
    return text


def _relocate(folder: Path, staging: Path) -> None:
    """Scripts and activate files name the build folder; make them name :data:`ENV_MOUNT` instead."""
    old, new = str(staging).encode(), ENV_MOUNT.encode()
    for path in (folder / "bin").iterdir():
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data[:4096] or (path.name.startswith("activate") and old in data):
            path.write_bytes(data.replace(old, new))


def _size(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if not p.is_symlink())


class _Progress:
    """One line per package pip collects, counted against the profile's requirements."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.collected = 0
        self.started = time.monotonic()

    def __call__(self, line: str) -> None:
        if line.startswith(("Collecting ", "Processing ")):
            self.collected += 1
            name = line.split()[1].rsplit("/", 1)[-1]
            total = len(self.profile.requirements)
            print(
                f"  [env {self.profile.name}] {self.collected}: {name} ({total} requested, with their dependencies)",
                file=sys.stderr,
                flush=True,
            )
        elif line.startswith("Installing collected packages"):
            print(
                f"  [env {self.profile.name}] installing {self.collected} package(s) ...", file=sys.stderr, flush=True
            )


def build(profile: Profile, root: Path | None = None, *, force: bool = False) -> Environment:
    """Build ``profile`` into its folder (or return it, already built, unless ``force``)."""
    base = root or env_root()
    existing = find(profile, base)
    if existing is not None and not force:
        return existing
    base.mkdir(parents=True, exist_ok=True)
    _sweep(base)
    final = base / profile.folder_name
    staging = base / f".{profile.folder_name}.tmp-{owner.own_token()}"
    shutil.rmtree(staging, ignore_errors=True)
    started = time.monotonic()
    print(f"building environment {profile.name} ({len(profile.requirements)} requirements) in {final}", file=sys.stderr)
    try:
        if profile.rootfs is not None:
            lock = build_rootfs(profile.rootfs, staging, ENV_MOUNT)
            _place(profile, staging, final, lock, profile.rootfs.python, started)
            return _built(profile, base, started)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(staging)], check=True, capture_output=True)
        with_deps = [r for r in profile.requirements if not r.endswith(NO_DEPS)]
        without = [r.removesuffix(NO_DEPS).strip() for r in profile.requirements if r.endswith(NO_DEPS)]
        log = staging / "build.log"
        python = staging / "bin" / "python"
        progress = _Progress(profile)
        for name, lines, options in (("requirements.txt", with_deps, ()), ("no-deps.txt", without, ("--no-deps",))):
            if lines:
                listed = staging / name
                listed.write_text("\n".join(lines) + "\n", encoding="utf-8")
                _pip(
                    python, "install", "--progress-bar", "off", *options, "-r", str(listed), log=log, progress=progress
                )
        if not without:  # a package installed without its dependencies does not meet its own pins, by design
            _pip(python, "check", log=log)
        lock = tuple(line for line in _pip(python, "freeze", log=log).splitlines() if line.strip())
        _relocate(staging, staging)
        _place(profile, staging, final, lock, platform.python_version(), started)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _built(profile, base, started)


def _place(profile: Profile, staging: Path, final: Path, lock: tuple[str, ...], python: str, started: float) -> None:
    """Write the record into the finished build and rename it into place."""
    record = Environment(
        name=profile.name,
        digest=profile.digest,
        path=final,
        requirements=profile.requirements,
        lock=lock,
        python=python,
        gpu=profile.gpu,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        size_bytes=_size(staging),
        rootfs=profile.rootfs is not None,
        build_seconds=round(time.monotonic() - started, 1),
    )
    data = {k: v for k, v in asdict(record).items() if k != "path"}
    (staging / _RECORD).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)


def _built(profile: Profile, base: Path, started: float) -> Environment:
    built = find(profile, base)
    assert built is not None
    size = f"{built.size_bytes / 2**20:.0f} MiB"
    print(f"environment {profile.name} built in {time.monotonic() - started:.0f} s ({size})", file=sys.stderr)
    return built


def ensure(profile: Profile, root: Path | None = None) -> Environment:
    """The built environment of ``profile``, built now if missing; a failed build names the command."""
    found = find(profile, root)
    if found is not None:
        return found
    try:
        return build(profile, root)
    except PodiumError as exc:
        raise PodiumError(
            f"{exc}\nThe agent needs environment {profile.name!r}. Fix: make the package index reachable and run "
            f"`podium env build --profile {profile.name}{' --gpu' if profile.gpu else ''}`"
        ) from None

"""Building an environment: a virtualenv of the host's Python filled by pip from the profile (or a root
filesystem, :mod:`podium.environments.rootfs`), staged in a folder of its own, its scripts made to start from
:data:`~podium.environments.profile.ENV_MOUNT`, its record written and the folder renamed into place only when
done; :func:`ensure` builds what is missing and names the command when it cannot. One builder per environment at a
time (a lock file beside it): a second waits and takes the first one's build."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from podium import owner
from podium.environments.profile import ENV_MOUNT, NO_DEPS, Profile
from podium.environments.rootfs import build_rootfs
from podium.environments.store import _RECORD, Environment, _sweep, env_root, find
from podium.errors import PodiumError

__all__ = ["build", "ensure"]


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
    """Build ``profile`` into its folder (or return it, already built, unless ``force``); one builder at a time."""
    base = root or env_root()
    existing = find(profile, base)
    if existing is not None and not force:
        return existing
    base.mkdir(parents=True, exist_ok=True)
    # one builder at a time: a second podium waits and takes the first one's build, instead of building it again
    # and replacing the folder under the first one's runs
    lock = base / f".lock-{profile.folder_name}"
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(
                owner.exclusive(lock, f"waiting for another build of environment {profile.name} in {base}")
            )
        except OSError as error:  # a link or a folder in its place, a read-only cache
            raise PodiumError(
                f"cannot build environment {profile.name} in {base}: its lock {lock.name}: {error.strerror}. "
                "Fix: remove what is at that path, or set PODIUM_ENV_DIR to a folder of your own"
            ) from None
        existing = find(profile, base)  # built by the builder this one waited for
        if existing is not None and not force:
            return existing
        return _build(profile, base)


def _build(profile: Profile, base: Path) -> Environment:
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

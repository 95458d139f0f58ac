"""The host Python an isolating sandbox shows its agent: the installation and every folder on its path.

The agent's ``python3`` is the harness's own interpreter (first on the sandbox's ``PATH``). It needs its
installation (``sys.prefix`` and ``sys.base_prefix``: a venv and its base) and every folder its ``sys.path``
reaches beyond them: the user site (``pip install --user``), folders that ``.pth`` files add (another venv, an
editable checkout), a ``--system-site-packages`` chain, a conda-like environment under ``/opt``. Each is shown
read-only at its own host path, so absolute paths in ``.pth`` files still lead there; the system directories
are shown anyway. ``PYTHONUSERBASE`` points the interpreter inside at the host's user site, since ``HOME`` is
``/home`` there. The path is the one the interpreter finds by itself, read once from a fresh start of it:
``PYTHONPATH`` and what the harness's program added at run time (a test runner's folders) are the harness's
own, and the agent's environment, cleared, never leads its Python there.

Never shown, whatever the path says: the current directory (``''``, or the folder ``python -m`` puts first), a
top-level folder (``/home``, ``/opt``), the harness user's home or anything above it (``~/.ssh``, Kaggle's
token), ``/proc``, ``/sys`` and ``/dev``, and anything at, inside or above a hidden folder (the data dir, which
holds the answers; the runs folder; every writable mount). A folder left out for one of the last three reasons
is named in a warning. An installation (prefix) that holds a hidden folder is refused: it cannot be hidden
from an interpreter that needs it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import site
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from podium.errors import PodiumError
from podium.sandbox._types import is_within

__all__ = ["SYSTEM_DIRS", "HostPython", "host_python", "python_prefixes"]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
NEVER_SHOWN = ("/proc", "/sys", "/dev")


@dataclass
class HostPython:
    """What the sandbox shows of the host's Python: ``folders`` (bound read-only at their host paths, outermost
    only), ``env`` for the interpreter inside, and ``warnings`` naming the path folders left out."""

    folders: list[str]
    env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def python_prefixes() -> list[str]:
    """The installation(s) of the running interpreter (a venv and its base), outside the system dirs."""
    candidates = _variants({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    return outermost(p for p in candidates if not any(is_within(p, system) for system in SYSTEM_DIRS))


def host_python(hidden: Sequence[Path] = (), path: Sequence[str] | None = None) -> HostPython:
    """The installation and the folders of ``path`` (default: :func:`interpreter_path`) an agent's Python needs, none at, in
    or above a folder of ``hidden``; a :class:`PodiumError` when an installation holds a hidden folder."""
    secret = sorted(_variants(str(h) for h in hidden))
    prefixes = python_prefixes()
    for prefix in prefixes:
        inside = [h for h in secret if is_within(h, prefix)]
        if inside:
            raise PodiumError(
                f"The Python installation {prefix} holds {inside[0]}, which the agent must not see, and the sandbox "
                "shows the agent that installation. Fix: keep the data dir and the runs folder outside it "
                "(--data-dir, --runs-dir)."
            )
    homes = _variants(_homes())
    cwd = _variants([os.getcwd()])
    view = HostPython(folders=[])
    extra: list[str] = []
    for entry in path if path is not None else interpreter_path():
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue  # '' is the current directory; a relative entry too; a zip file or a missing folder
        variants = _variants([entry])
        if variants & cwd:
            continue
        why = _refusal(variants, homes, secret)
        if why:
            view.warnings.append(
                f"the folder {entry} on the harness's Python path is not shown to the agent: {why}; an agent "
                "that needs a package from it fails to import it. Fix: install the package elsewhere."
            )
            continue
        extra += [v for v in variants if not any(is_within(v, system) for system in SYSTEM_DIRS)]
    view.folders = outermost([*prefixes, *extra])
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and any(is_within(os.path.realpath(user_site), f) or is_within(user_site, f) for f in view.folders):
        view.env["PYTHONUSERBASE"] = site.getuserbase()
    return view


@functools.cache
def interpreter_path() -> tuple[str, ...]:
    """The ``sys.path`` of a fresh start of this interpreter, as the agent's Python starts: no ``PYTHON*`` variable
    but ``PYTHONUSERBASE`` (the sandbox passes it on), nothing the running program added (``sys.path`` if that
    start fails)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") or k == "PYTHONUSERBASE"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", "import sys; print('\\0'.join(sys.path))"],
            env=env, cwd="/", capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return tuple(sys.path)
    return tuple(done.stdout.rstrip("\n").split("\0"))


def outermost(paths: Iterable[str]) -> list[str]:
    """``paths`` without those inside another of them, sorted."""
    unique = set(paths)
    return sorted(p for p in unique if not any(p != q and is_within(p, q) for q in unique))


def _refusal(variants: set[str], homes: set[str], secret: Sequence[str]) -> str | None:
    for path in variants:
        if path.count("/") < 2:
            return "a top-level folder"
        if any(is_within(path, n) for n in NEVER_SHOWN):
            return "a system folder of the kernel"
        if any(is_within(home, path) for home in homes):
            return "it is the harness user's home or holds it"
        for folder in secret:
            if is_within(path, folder) or is_within(folder, path):
                return f"it is in, or holds, {folder}, which the agent must not see"
    return None


def _variants(paths: Iterable[str]) -> set[str]:
    """Each path normalised, and with its links resolved."""
    found: set[str] = set()
    for path in paths:
        found |= {os.path.normpath(os.path.abspath(path)), os.path.realpath(path)}
    return found


def _homes() -> list[str]:
    homes = [os.path.expanduser("~")]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    return [h for h in homes if h and h != "/"]

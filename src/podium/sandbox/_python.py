"""The host Python an isolating sandbox shows its agent: the folders that hold importable packages, and the few
files the interpreter needs to start, never a home, never a dotfile or a credentials file.

The agent's ``python3`` is the harness's own interpreter (first on the sandbox's ``PATH``). What it is shown,
read-only, each at its own host path (so that absolute paths in ``.pth`` files still lead there):

* **folders**: the folders on the interpreter's path: the standard library and ``lib-dynload``, every
  site-packages (a venv's, its base's with ``--system-site-packages``), the user site (``pip install --user``;
  ``PYTHONUSERBASE`` points the interpreter inside at it, since ``HOME`` is ``/home`` there), and the folders that
  ``.pth`` files add (another venv, an editable checkout's ``src``). The path is the one the interpreter finds by
  itself, read once from a fresh start of it: ``PYTHONPATH`` and what the harness's program added at run time
  (a test runner's folders) are the harness's own, and the agent's environment, cleared, never leads its Python
  there.
* **files**: the interpreter (every ``python*`` name beside the one on ``PATH``, and the links they go through),
  each venv's ``pyvenv.cfg``, the shared libraries of the installation's library folder (``libpython3.X.so``; a
  conda environment's too), and the scripts beside the interpreter that run with it (``pip``: a ``#!`` line
  naming it). Never its whole installation (``sys.prefix``): an interpreter built with ``--prefix=$HOME`` has
  ``sys.prefix`` = the home, whose dotfiles, ``.git``, ``.env`` and Kaggle token must stay out.

Never shown, whatever the path says: the current directory (``''``, or the folder ``python -m`` puts first), a
top-level folder (``/home``, ``/opt``), a home (the harness user's, root's, any account's from uid 1000) or a
folder holding one, ``/proc``, ``/sys`` and ``/dev``, and anything at, inside or above a hidden folder (the data
dir, which holds the answers; the runs folder; every writable mount). A folder left out is named in a warning;
the standard library left out stops the run, since no interpreter starts without it.

Inside what is shown, every dotfile and dot-folder (but ``.libs``, where older wheels keep their shared
libraries) and every file named like a credential (``kaggle.json``, ``credentials``, ``id_rsa``,
``*.key``, ...) is *covered* (:attr:`HostPython.covers`): the sandbox lays an empty file (``/dev/null``) or an
empty read-only folder over it, so the agent reads nothing of it. Links are left as they are: inside the sandbox
a link leads only to what the sandbox shows. A folder is walked once per podium process (and again once its own
modification time changes); a folder with more than :data:`MAX_COVERS` such entries, or more than
:data:`MAX_ENTRIES` entries, is not shown at all.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import re
import site
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from podium.errors import PodiumError
from podium.sandbox._types import is_within

__all__ = ["MAX_COVERS", "MAX_ENTRIES", "SYSTEM_DIRS", "Cover", "HostPython", "host_python"]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
NEVER_SHOWN = ("/proc", "/sys", "/dev")
#: Dot-folders inside packages that imports need: auditwheel's vendored shared libraries (older wheels).
KEPT_DOT_FOLDERS = frozenset({".libs", ".dylibs"})
#: Names of credential files (lower case), covered wherever they lie in what is shown.
CREDENTIAL_NAMES = frozenset(
    {
        "kaggle.json",
        "credentials",
        "credentials.json",
        "credentials.db",
        "client_secret.json",
        "secrets.json",
        "secrets.toml",
        "secrets.yaml",
        "secrets.yml",
        "token.json",
        "netrc",
        "_netrc",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
    }
)
CREDENTIAL_SUFFIXES = (".key", ".p12", ".pfx", ".kdbx", ".jks", ".keystore")
MAX_COVERS = 1000
MAX_ENTRIES = 2_000_000
_INTERPRETER_NAME = re.compile(r"python(\d+(\.\d+)?)?")
_SHARED_LIBRARY = re.compile(r"lib[^/]*\.so(\.[0-9.]+)?")
_SHEBANG_BYTES = 512


@dataclass(frozen=True)
class Cover:
    """A path inside a shown folder that the sandbox covers: with an empty file, or (``folder``) an empty folder."""

    path: str
    folder: bool


@dataclass
class HostPython:
    """What the sandbox shows of the host's Python: ``folders`` and ``files`` (bound read-only at their host paths;
    folders outermost only), ``covers`` laid over what they hold, ``env`` for the interpreter inside, and
    ``warnings`` naming the folders left out."""

    folders: list[str]
    files: list[str] = field(default_factory=list)
    covers: list[Cover] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def shown(self) -> list[str]:
        """Every folder and file bound, folders first."""
        return [*self.folders, *self.files]


def host_python(hidden: Sequence[Path] = (), path: Sequence[str] | None = None) -> HostPython:
    """The folders of ``path`` (default: :func:`interpreter_path`) and the interpreter's files that an agent's Python
    needs, none at, in or above a folder of ``hidden``, none a home; a :class:`PodiumError` when the standard library
    cannot be shown."""
    secret = sorted(_variants(str(h) for h in hidden))
    homes = _variants(_homes())
    cwd = _variants([os.getcwd()])
    required = _variants(p for p in (sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")) if p)
    view = HostPython(folders=[])
    extra: list[str] = []
    for entry in path if path is not None else interpreter_path():
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue  # '' is the current directory; a relative entry too; a zip file or a missing folder
        variants = _variants([entry])
        if variants & cwd:
            continue
        why = _refusal(variants, homes, secret)
        if why is None:
            extra += [v for v in variants if not _in_system(v)]
        else:
            _left_out(view, entry, why, variants & required)
    folders = outermost(extra)
    for folder in list(folders):
        covers, why = _covers_of(folder)
        if why is None:
            view.covers += covers
        else:
            folders.remove(folder)
            _left_out(view, folder, why, {folder} & required)
    view.folders = folders
    view.files = _interpreter_files(folders, secret)
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site and any(is_within(os.path.realpath(user_site), f) or is_within(user_site, f) for f in view.folders):
        view.env["PYTHONUSERBASE"] = site.getuserbase()
    return view


def _left_out(view: HostPython, folder: str, why: str, required: set[str]) -> None:
    if required:
        raise PodiumError(
            f"The standard library of the Python podium runs from ({folder}) cannot be shown to the agent: {why}. "
            "Fix: keep the data dir and the runs folder outside that installation (--data-dir, --runs-dir), or run "
            "podium from a Python installed elsewhere (a venv of a system Python)."
        )
    view.warnings.append(
        f"the folder {folder} on the harness's Python path is not shown to the agent: {why}; an agent "
        "that needs a package from it fails to import it. Fix: install the package elsewhere."
    )


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


def _interpreter_files(folders: Sequence[str], secret: Sequence[str]) -> list[str]:
    """The interpreter's own files outside the shown folders and the system dirs: a :class:`PodiumError` when one
    lies in or above a hidden folder (the interpreter cannot start without it)."""
    found: set[str] = set()
    bindir = os.path.dirname(sys.executable)
    names = _interpreters(bindir)
    for executable in {*names, sys.executable, getattr(sys, "_base_executable", sys.executable)}:
        found.update(_link_chain(executable))
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            found.add(os.path.join(prefix, "pyvenv.cfg"))
    libdir = sysconfig.get_config_var("LIBDIR")
    if isinstance(libdir, str) and os.path.isdir(libdir) and not _in_system(libdir):
        found.update(_regular_entries(libdir, lambda name: bool(_SHARED_LIBRARY.fullmatch(name))))
    found.update(_scripts(bindir, names))
    files = set()
    for file in found:
        if _in_system(file) or any(is_within(file, folder) for folder in folders):
            continue
        for folder in secret:
            if is_within(file, folder):
                raise PodiumError(
                    f"The Python podium runs from needs {file}, which lies in {folder}, which the agent must not see. "
                    "Fix: keep the data dir and the runs folder outside that installation (--data-dir, --runs-dir)."
                )
        files.add(file)
    return sorted(files)


def _interpreters(bindir: str) -> list[str]:
    """The ``python``, ``python3``, ``python3.X`` entries of ``bindir`` that lead to a file."""
    with contextlib.suppress(OSError):
        return sorted(
            os.path.join(bindir, name)
            for name in os.listdir(bindir)
            if _INTERPRETER_NAME.fullmatch(name) and os.path.isfile(os.path.join(bindir, name))
        )
    return []


def _link_chain(path: str) -> list[str]:
    """``path`` and every link it goes through to its file, each as an absolute path (at most 40 links)."""
    chain = [os.path.abspath(path)]
    for _ in range(40):
        current = chain[-1]
        if not os.path.islink(current):
            break
        target = os.path.join(os.path.dirname(current), os.readlink(current))
        chain.append(os.path.normpath(target))
    return [p for p in chain if os.path.isfile(p)]


def _regular_entries(folder: str, wanted: Callable[[str], bool]) -> list[str]:
    """The entries of ``folder`` whose names ``wanted`` accepts and that lead to a regular file (no dotfile)."""
    found = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(".") and wanted(entry.name) and os.path.isfile(entry.path):
                found.append(entry.path)
    return found


def _scripts(bindir: str, interpreters: Sequence[str]) -> list[str]:
    """The scripts in ``bindir`` that run with one of its interpreters (their ``#!`` line, or pip's ``exec``
    trampoline, names it)."""
    names = {os.fsencode(p) for p in [*interpreters, sys.executable]}

    def runs_here(name: str) -> bool:
        try:
            with open(os.path.join(bindir, name), "rb") as script:
                head = script.read(_SHEBANG_BYTES)
        except OSError:
            return False
        return head.startswith(b"#!") and any(n in head for n in names)

    return _regular_entries(bindir, runs_here)


def _covers_of(folder: str) -> tuple[list[Cover], str | None]:
    try:
        info = os.stat(folder)
    except OSError as error:
        return [], f"it cannot be read ({error.strerror})"
    return _walk_covers(folder, info.st_mtime_ns, info.st_ino)


@functools.lru_cache(maxsize=256)
def _walk_covers(folder: str, mtime_ns: int, inode: int) -> tuple[list[Cover], str | None]:
    covers: list[Cover] = []
    seen = 0
    todo = [folder]
    while todo:
        with contextlib.suppress(OSError), os.scandir(todo.pop()) as entries:
            for entry in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    return [], f"it holds more than {MAX_ENTRIES:,} entries, too many to search for credentials"
                if entry.is_symlink():
                    continue  # inside the sandbox a link leads only to what the sandbox shows
                is_dir = entry.is_dir(follow_symlinks=False)
                if _secret_name(entry.name, is_dir):
                    covers.append(Cover(entry.path, is_dir))
                    if len(covers) > MAX_COVERS:
                        return [], f"it holds more than {MAX_COVERS} dotfiles or credential files, too many to cover"
                elif is_dir:
                    todo.append(entry.path)
    return sorted(covers, key=lambda c: c.path), None


def _secret_name(name: str, is_dir: bool) -> bool:
    """Whether an entry called ``name`` is covered: a dotfile or dot-folder (but :data:`KEPT_DOT_FOLDERS`), or a
    file named like a credential."""
    if name.startswith("."):
        return not (is_dir and name in KEPT_DOT_FOLDERS)
    lower = name.lower()  # a folder named like a credential is a package (``docker.credentials``)
    return not is_dir and (lower in CREDENTIAL_NAMES or lower.endswith(CREDENTIAL_SUFFIXES))


def _refusal(variants: set[str], homes: set[str], secret: Sequence[str]) -> str | None:
    for path in variants:
        if path.count("/") < 2:
            return "a top-level folder"
        if any(is_within(path, n) for n in NEVER_SHOWN):
            return "a system folder of the kernel"
        if any(is_within(home, path) for home in homes):
            return "it is a home folder or holds one"
        for folder in secret:
            if is_within(path, folder) or is_within(folder, path):
                return f"it is in, or holds, {folder}, which the agent must not see"
    return None


def _in_system(path: str) -> bool:
    return any(is_within(path, system) for system in SYSTEM_DIRS)


def _variants(paths: Iterable[str]) -> set[str]:
    """Each path normalised, and with its links resolved."""
    found: set[str] = set()
    for path in paths:
        found |= {os.path.normpath(os.path.abspath(path)), os.path.realpath(path)}
    return found


def _homes() -> list[str]:
    """The harness user's home (``$HOME`` and its account's), root's, and every account's from uid 1000 (but
    ``nobody``): folders a user keeps keys in."""
    homes = [os.path.expanduser("~")]
    with contextlib.suppress(KeyError):
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    with contextlib.suppress(OSError):
        homes += [a.pw_dir for a in pwd.getpwall() if a.pw_uid == 0 or 1000 <= a.pw_uid < 65534]
    return [h for h in homes if h and h != "/" and not _in_system(h) and not any(is_within(h, n) for n in NEVER_SHOWN)]

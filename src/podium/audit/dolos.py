"""Dolos (``@dodona/dolos-lib`` from npm, pinned), run by Node through podium's driver ``compare.mjs``.

    dolos_home()          where the pinned install lives: $PODIUM_DOLOS_DIR, else
                          ~/.cache/podium/dolos/<hash of package.json + package-lock.json>/
    install_dolos()       ``npm ci`` of the pinned lock into that folder (once; atomic rename)
    dolos_available()     (True, "dolos-lib 3.5.1, node v20...") or (False, why not)
    run_dolos(paths)      every pair of ``report.allPairs()``: similarity and fragments

The driver and the lock ship with podium (``podium/audit/dolos_driver/``); the install is the
lock's exact tree, so every machine compares with the same Dolos. ``tree-sitter`` builds a native
module on install (a C++ compiler and ``make``; about 3 minutes on 2 cores, once).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from podium.errors import HarnessError
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "DOLOS_VERSION",
    "DolosError",
    "DolosPair",
    "DolosRun",
    "dolos_available",
    "dolos_home",
    "install_dolos",
    "run_dolos",
]

#: The dolos-lib version the lock pins.
DOLOS_VERSION = "3.5.1"
_DRIVER_FILES = ("package.json", "package-lock.json", "compare.mjs")
_MARKER = ".podium-installed"


class DolosError(HarnessError, RuntimeError):
    """Node, npm or the driver failed; the message says which and how to fix it. A harness error: the audit
    reports it as such and caches no verdict of it."""


def _driver() -> resources.abc.Traversable:
    return resources.files("podium.audit") / "dolos_driver"


def dolos_home() -> Path:
    """The install folder: ``$PODIUM_DOLOS_DIR``, else a cache folder named by the pinned manifests' hash."""
    if given := os.environ.get("PODIUM_DOLOS_DIR"):
        return Path(given).expanduser()
    digest = hashlib.sha256()
    for name in ("package.json", "package-lock.json"):
        digest.update((_driver() / name).read_bytes())
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "dolos" / digest.hexdigest()[:16]


def _installed(home: Path) -> bool:
    return (home / _MARKER).is_file() and (home / "node_modules" / "@dodona" / "dolos-lib" / "package.json").is_file()


def install_dolos(home: Path | None = None, *, quiet: bool = False) -> Path:
    """Install the pinned dolos-lib with ``npm ci`` into ``home`` (default :func:`dolos_home`), once.

    The install happens in a temporary folder beside ``home`` and is renamed into place, so a failed or
    interrupted one leaves nothing half-made. Raises DolosError when Node or npm is missing or npm fails.
    """
    home = home or dolos_home()
    if _installed(home):
        return home
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise DolosError("Node.js 18+ and npm are not on PATH: install them (e.g. apt-get install nodejs npm)")
    home.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{home.name}.tmp-"))
    try:
        for name in _DRIVER_FILES:
            (scratch / name).write_bytes((_driver() / name).read_bytes())
        if not quiet:
            print(
                f"podium: installing @dodona/dolos-lib {DOLOS_VERSION} for the plagiarism check: npm ci in {home} "
                "(once; tree-sitter compiles a native module, a few minutes)",
                file=sys.stderr,
            )
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            tail = " ".join(done.stdout.strip().splitlines()[-3:])[:400]
            raise DolosError(f"npm ci of dolos-lib {DOLOS_VERSION} failed (exit {done.returncode}): {tail}")
        (scratch / _MARKER).write_text(DOLOS_VERSION + "\n")
        try:
            os.rename(scratch, home)
        except OSError:  # another process finished first
            if not _installed(home):
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return home


def dolos_available(*, install: bool = True) -> tuple[bool, str]:
    """Whether Dolos can run here (installing it first when ``install``), and its versions or why not."""
    node = shutil.which("node")
    if node is None:
        return False, "node is not on PATH"
    try:
        home = install_dolos() if install else dolos_home()
    except DolosError as exc:
        return False, str(exc)
    if not _installed(home):
        return False, f"dolos-lib is not installed in {home}"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return True, f"dolos-lib {DOLOS_VERSION}, node {version}"


@dataclass(frozen=True)
class DolosPair:
    """One pair of ``report.allPairs()``: the two paths, Dolos's similarity, fragments as 1-based line ranges."""

    left: str
    right: str
    similarity: float
    fragments: tuple[tuple[tuple[int, int], tuple[int, int]], ...]


@dataclass(frozen=True)
class DolosRun:
    """What one analysis gave: its pairs and the versions that made them."""

    pairs: tuple[DolosPair, ...]
    dolos: str
    node: str


def run_dolos(
    paths: list[Path], *, focus: list[Path] | None = None, fragments: bool = True, timeout: float = 600
) -> DolosRun:
    """Analyse ``paths`` together with Dolos's default options: every pair that shares a fingerprint (with
    ``focus``, only the pairs with exactly one side in it), with its fragments unless ``fragments`` is false."""
    home = dolos_home()
    node = shutil.which("node")
    if node is None or not _installed(home):
        raise DolosError(f"Dolos is not installed (node: {node or 'missing'}; {home}); see install_dolos")
    request = json.dumps(
        {
            "paths": [str(p) for p in paths],
            "focus": None if focus is None else [str(p) for p in focus],
            "fragments": fragments,
        }
    )
    try:
        done = subprocess.run(
            [node, str(home / "compare.mjs")],
            input=request,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DolosError(f"Dolos ran past {timeout:.0f} s on {len(paths)} files") from exc
    if done.returncode != 0:
        raise DolosError(f"the Dolos driver failed (exit {done.returncode}): {done.stderr.strip()[-400:]}")
    try:  # the driver's own JSON, but about files the agent wrote: bounded, and a failure is Dolos's
        data = loads(done.stdout, max_bytes=256 << 20, what="the Dolos driver's output")
    except UntrustedJSONError as error:
        raise DolosError(str(error)) from None
    pairs = tuple(
        DolosPair(
            str(p["left"]),
            str(p["right"]),
            float(p["similarity"]),
            tuple(
                ((f["left"][0] + 1, f["left"][1] + 1), (f["right"][0] + 1, f["right"][1] + 1)) for f in p["fragments"]
            ),
        )
        for p in data["pairs"]
    )
    return DolosRun(pairs, str(data["dolos"]), str(data["node"]))


if __name__ == "__main__":  # python -m podium.audit.dolos: install now (CI does it in the background)
    print(install_dolos())

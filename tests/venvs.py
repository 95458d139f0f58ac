"""Virtual environments for the tests that run podium as a user who installed it in one (not a test module)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

OUTER_PTH = "podium-test-outer.pth"


def make_venv(venv: Path) -> Path:
    """A venv of this interpreter at ``venv`` (without pip) that sees this interpreter's packages however they were
    installed, through one ``.pth`` file listing the folders of its path (the base's site-packages, a venv's, the
    user site, what its ``.pth`` files add, a venv on top of another), read from a fresh start of this interpreter,
    without ``PYTHONPATH`` and without what the test runner added. Not ``--system-site-packages``: that reaches
    the base installation only (the machine's Python when this one is a venv), and it would also hide from the
    tests whether the sandbox shows the agent a package folder that only a ``.pth`` file leads to."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    own = set(_path_of(venv / "bin" / "python"))  # the standard library: listed again, pip's build isolation drops it
    folders = [p for p in _path_of(Path(sys.executable)) if p not in own and os.path.isdir(p)]
    site = Path(sysconfig.get_path("purelib", scheme="venv", vars={"base": str(venv), "platbase": str(venv)}))
    (site / OUTER_PTH).write_text("".join(f"{folder}\n" for folder in folders))
    return venv


def _path_of(python: Path) -> list[str]:
    """The ``sys.path`` of a fresh start of ``python``, without ``PYTHONPATH``, '' (the current folder) left out."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    shown = subprocess.run(
        [str(python), "-c", "import sys; print('\\n'.join(sys.path))"],
        env=env, cwd="/", capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [p for p in shown.stdout.splitlines() if p]


@contextlib.contextmanager
def venv_under(base: str) -> Iterator[Path]:
    """A venv of this interpreter (see :func:`make_venv`: offline and fast) in a fresh folder under ``base``."""
    root = Path(base) / f"podium-venv-{uuid.uuid4().hex[:8]}"
    try:
        root.mkdir(parents=True)
    except OSError as error:
        pytest.skip(f"cannot make a folder under {base}: {error}")
    try:
        yield make_venv(root / "venv")
    finally:
        shutil.rmtree(root, ignore_errors=True)

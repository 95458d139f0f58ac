"""Agents: what to start inside the sandbox, and with what.

An agent is a folder holding ``agent.yaml``::

    name: my-agent
    command: [python3, /home/agent/main.py]   # run in /home inside the sandbox
    env: {MY_SETTING: "1"}                     # added to the agent's environment
    resources: {cpus: 2, memory: 8G, disk: 50G, gpus: 0}  # defaults; `podium run` flags override them
    environment: minimal                       # the Python its code runs with (podium.environments)

Without ``image``, the agent runs on the host's system and Python (bwrap, or docker's host image)
and its folder is mounted read-only at ``/home/agent``. ``environment:`` names the environment its
code runs with: a profile (``minimal``, ``standard``), a requirements file in its folder, or
``{profile: NAME, requirements: [PINNED, ...]}`` for a profile plus packages of its own; it is
mounted at ``/opt/podium/env`` and first on ``PATH``. Without it the agent runs with podium's own
interpreter and packages (the built-in offline agents do). With ``image: NAME`` (docker only) it runs
in that image, which must already be on the local engine (podium never pulls) and carries the
agent itself, as MLE-bench agents' images do; ``build: FOLDER`` (relative to the agent folder)
has podium build the image from that folder's Dockerfile on the local engine first. An ``llm:``
section (provider, models, token and request budget; :mod:`podium.agents.llm`) gives the agent its
model through podium's LLM proxy (:mod:`podium.services.llm`), the only way out of the sandbox. Built-in
agents (``dummy``, ``baseline``) are folders under ``podium/agents/builtin``; any other folder
works the same way, so users and tests plug in their own agents without touching podium.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from podium.agents.builtin_names import BUILTIN, builtin_names
from podium.agents.llm import LLM_KEYS, LLMConfig, parse_llm_config
from podium.errors import PodiumError, UsageError
from podium.units import parse_size

__all__ = ["BUILTIN", "KEYS", "AgentSpec", "builtin_names", "folder_digest", "load_agent_folder"]


@dataclass(frozen=True)
class AgentSpec:
    name: str
    folder: Path
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: float | None = None
    memory_bytes: int | None = None
    disk_bytes: int | None = None
    gpus: int | None = None
    image: str | None = None
    build: Path | None = None
    llm: LLMConfig | None = None
    #: The environment profile (a name, or a requirements file's path) and extra requirements; None: podium's own.
    environment: str | None = None
    environment_requirements: tuple[str, ...] = ()
    #: Build arguments for its image (``--build-arg``), and whether it follows MLE-bench's conventions
    #: (instructions.txt, the validation endpoint and the model on localhost; :mod:`podium.agents.mlebench`).
    build_args: Mapping[str, str] = field(default_factory=dict)
    mlebench: bool = False

    @property
    def needs_docker(self) -> bool:
        return self.image is not None or self.build is not None


#: The keys of agent.yaml (see the module docstring), of its ``resources`` and of its ``llm`` section.
KEYS = ("name", "command", "env", "resources", "image", "build", "llm", "environment")
RESOURCE_KEYS = ("cpus", "memory", "disk", "gpus")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _kind(value: Any) -> str:
    """A YAML value's kind in words, for messages."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a true/false value)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _check_keys(where: str, section: str, raw: Mapping[Any, Any], known: Sequence[str]) -> None:
    """Every key of ``raw`` must be one of ``known``; the error suggests the closest one."""
    for key in raw:
        if key in known:
            continue
        name = f"{section}.{key}" if section else str(key)
        # a known key that the unknown one lengthens comes first (environ: is env:), then the closest one
        close = [k for k in known if str(key).startswith(k)] or difflib.get_close_matches(
            str(key), known, n=1, cutoff=0.5
        )
        fix = f"did you mean {close[0]!r}?" if close else "remove it or correct its name."
        raise UsageError(f"{where}: unknown key {name!r}. Fix: {fix} (the keys are {', '.join(known)})")


def _positive_size(where: str, key: str, value: Any) -> int | None:
    if value is None:
        return None
    try:
        size = parse_size(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    except PodiumError:
        size = None
    if size is None or size <= 0:
        raise UsageError(f"{where}: {key} must be a positive size such as 16G or 512M, got {_kind(value)}")
    return size


def _read_yaml(path: Path) -> dict[str, Any]:
    """agent.yaml as a mapping, or one line saying what is wrong with the file."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(f"{path}: not valid YAML{at}: {problem}. Fix: correct the syntax there") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise UsageError(
            f"{path}: the file must be a mapping of keys ({', '.join(KEYS)}), got {_kind(raw)}. "
            "Fix: write one key per line at the top level, e.g. `command: [python3, /home/agent/main.py]`"
        )
    return raw


def load_agent_folder(name_or_path: str) -> AgentSpec:
    """A built-in agent by name, or an agent folder (or its agent.yaml) by path.

    The whole file is checked against its schema (:data:`KEYS`); anything wrong is one error naming
    the file, the key and the fix, and an unknown key is an error with the closest known one.
    """
    path = Path(name_or_path)
    folder = path.parent if path.name == "agent.yaml" else path
    if not (folder / "agent.yaml").is_file():
        builtin = BUILTIN / name_or_path
        if not (builtin / "agent.yaml").is_file():  # a built-in's folder is its name as a Python name
            builtin = BUILTIN / name_or_path.replace("-", "_")
        if not (builtin / "agent.yaml").is_file():
            names = builtin_names()
            close = difflib.get_close_matches(name_or_path, names, n=2)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise UsageError(
                f"no agent {name_or_path!r}: not a built-in ({', '.join(names)}) and no agent.yaml at {folder}.{hint}"
            )
        folder = builtin
    where = str(folder / "agent.yaml")
    raw = _read_yaml(folder / "agent.yaml")
    _check_keys(where, "", raw, KEYS)

    name = raw.get("name")
    if name is not None and (not isinstance(name, str) or not _AGENT_NAME.fullmatch(name)):
        raise UsageError(
            f"{where}: name must be a word of letters, digits, '.', '_' or '-' (such as my-agent), got {_kind(name)}"
        )
    command = raw.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in command)
    ):
        raise UsageError(
            f"{where}: command must be a list of words such as [python3, /home/agent/main.py], got {_kind(command)}"
        )
    env = raw.get("env") or {}
    if not isinstance(env, dict):
        raise UsageError(f"{where}: env must be a mapping such as {{MY_SETTING: '1'}}, got {_kind(env)}")
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.fullmatch(key):
            raise UsageError(f"{where}: env: {key!r} is not a variable name (letters, digits and _, not first a digit)")
        if not isinstance(value, (str, int, float, bool)):
            raise UsageError(
                f'{where}: env.{key} must be a text or a number, got {_kind(value)}. Fix: quote it, e.g. {key}: ""'
            )
    res = raw.get("resources") or {}
    if not isinstance(res, dict):
        raise UsageError(f"{where}: resources must be a mapping such as {{cpus: 2, memory: 8G}}, got {_kind(res)}")
    _check_keys(where, "resources", res, RESOURCE_KEYS)
    cpus = res.get("cpus")
    if cpus is not None and (
        isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not math.isfinite(cpus) or cpus <= 0
    ):
        raise UsageError(f"{where}: resources.cpus must be a number of CPU cores above 0, such as 2, got {_kind(cpus)}")
    gpus = res.get("gpus")
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
        raise UsageError(f"{where}: resources.gpus must be a whole number of GPUs, 0 or more, got {_kind(gpus)}")
    memory = _positive_size(where, "resources.memory", res.get("memory"))
    disk = _positive_size(where, "resources.disk", res.get("disk"))
    image = raw.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise UsageError(f"{where}: image must be an image name such as my-agent:1, got {_kind(image)}")
    build = None
    if raw.get("build") is not None:
        if not isinstance(raw["build"], str):
            raise UsageError(f"{where}: build must be a folder name such as image, got {_kind(raw['build'])}")
        build = (folder / raw["build"]).resolve()
        if not (build / "Dockerfile").is_file():
            raise UsageError(
                f"{where}: build: {raw['build']} should name a folder holding a Dockerfile; "
                f"{build / 'Dockerfile'} does not exist"
            )
    profile, requirements = _environment(where, folder, raw.get("environment"))
    llm = raw.get("llm")
    if llm is not None:
        if not isinstance(llm, dict):
            raise UsageError(f"{where}: llm must be a mapping such as {{provider: openai, models: [gpt-4o]}}")
        _check_keys(where, "llm", llm, LLM_KEYS)
    return AgentSpec(
        name=name or folder.name,
        folder=folder.resolve(),
        command=tuple(str(c) for c in command),
        env={k: str(v) for k, v in env.items()},
        cpus=float(cpus) if cpus is not None else None,
        memory_bytes=memory,
        disk_bytes=disk,
        gpus=gpus,
        image=image.strip() if image else None,
        build=build,
        llm=parse_llm_config(llm, where) if llm is not None else None,
        environment=profile,
        environment_requirements=requirements,
    )


def _environment(where: str, folder: Path, raw: Any) -> tuple[str | None, tuple[str, ...]]:
    """``environment:``: a profile name, a requirements file (relative to the agent folder), or a mapping."""
    if raw is None:
        return None, ()
    if isinstance(raw, str):
        raw = {"profile": raw}
    if not isinstance(raw, dict):
        raise UsageError(
            f"{where}: environment must be a profile name (minimal, standard), a requirements file or "
            f"{{profile: NAME, requirements: [...]}}, got {_kind(raw)}"
        )
    _check_keys(where, "environment", raw, ("profile", "requirements"))
    profile = raw.get("profile", "minimal")
    requirements = raw.get("requirements") or []
    if not isinstance(profile, str) or not profile.strip():
        raise UsageError(f"{where}: environment.profile must be a profile name or a file, got {_kind(profile)}")
    if not isinstance(requirements, list) or not all(isinstance(r, str) and r.strip() for r in requirements):
        raise UsageError(
            f"{where}: environment.requirements must be a list of pinned packages such as [lightgbm==4.7.0]"
        )
    if profile.endswith(".txt"):
        path = (folder / profile).resolve()
        if not path.is_file():
            raise UsageError(f"{where}: environment: {profile} should be a requirements file; {path} does not exist")
        profile = str(path)
    return profile, tuple(r.strip() for r in requirements)


def folder_digest(folder: Path, skip: Sequence[Path] = ()) -> str:
    """A hash of what an agent folder holds (file names and contents), for a run group's identity.

    Hidden entries, ``__pycache__`` and the folders in ``skip`` (a runs folder kept inside the
    agent's folder) are left out, so working in the folder does not change the agent.
    """
    skipped = {p.resolve() for p in skip}
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d != "__pycache__" and (here / d).resolve() not in skipped
        )
        for name in sorted(filenames):
            if name.startswith(".") or name.endswith(".pyc"):
                continue
            path = here / name
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            try:
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError as exc:  # unreadable: its name and the reason still count
                digest.update(f"unreadable: {exc.strerror}".encode())
            digest.update(b"\0")
    return digest.hexdigest()[:16]

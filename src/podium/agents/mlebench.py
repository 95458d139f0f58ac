"""MLE-bench's agent folders, used as they are: ``AGENTS_DIR:AGENT_ID``.

An MLE-bench agents directory holds one folder per scaffold, each with a ``config.yaml`` that
declares agent ids (``aide``, ``aide/dev``, ... with YAML anchors shared between them): the start
script and Dockerfile (paths relative to the agents directory), ``kwargs`` passed to the start
script (``kwargs_type: argparse`` as ``--key value``, ``omegaconf`` as ``key=value``), and
``env_vars``, where ``${{ secrets.NAME }}`` stands for a secret. podium finds the id the way
MLE-bench does (every ``**/config.yaml``), builds the image from the Dockerfile's folder on the
local engine (never pulling; MLE-bench's build arguments ``SUBMISSION_DIR``, ``LOGS_DIR``,
``CODE_DIR``, ``AGENT_DIR``), and runs ``bash $AGENT_DIR/start.sh KWARGS`` under ``--sandbox
docker`` with MLE-bench's paths and variables, ``/home/instructions.txt``, and the validation
endpoint where those agents look for it (``http://localhost:5000/validate``, multipart or plain).

Secrets never enter the sandbox: a provider's key (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``OPENROUTER_API_KEY``) becomes model access through podium's proxy (the agent gets a placeholder
key and the proxy's base URL on ``localhost``); any other secret is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from podium.agents.llm import PROVIDERS, LLMConfig, parse_llm_config
from podium.agents.spec import AgentSpec
from podium.errors import UsageError

__all__ = ["MLEBENCH_DIRS", "is_mlebench_ref", "load_mlebench_agent"]

#: MLE-bench's container paths (its ``agents/.shared_env``), given to the agent as variables and build args.
MLEBENCH_DIRS = {
    "SUBMISSION_DIR": "/home/submission",
    "LOGS_DIR": "/home/logs",
    "CODE_DIR": "/home/code",
    "AGENT_DIR": "/home/agent",
}
_SECRET = re.compile(r"^\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$")
_KEY_PROVIDER = {provider.api_key_env: name for name, provider in PROVIDERS.items()}
_KEYS = ("start", "dockerfile", "kwargs", "kwargs_type", "env_vars", "privileged")


def is_mlebench_ref(ref: str) -> bool:
    """Whether ``ref`` names an agent of an MLE-bench agents directory (``DIR:ID``)."""
    folder, sep, agent_id = ref.rpartition(":")
    return bool(sep and agent_id and Path(folder).is_dir() and not (Path(folder) / "agent.yaml").is_file())


def _find(agents_dir: Path, agent_id: str) -> tuple[Path, dict[str, Any]]:
    known = []
    for path in sorted(agents_dir.glob("**/config.yaml")):
        try:
            contents = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise UsageError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(contents, dict):
            continue
        known += [k for k, v in contents.items() if isinstance(v, dict) and "start" in v]
        if isinstance(contents.get(agent_id), dict):
            return path, contents[agent_id]
    listed = ", ".join(sorted(known)[:20]) or "none"
    raise UsageError(f"no agent id {agent_id!r} in any config.yaml under {agents_dir}; its ids are: {listed}")


def _kwargs(where: str, kind: Any, kwargs: Any) -> list[str]:
    if not kwargs:
        return []
    if not isinstance(kwargs, dict):
        raise UsageError(f"{where}: kwargs must be a mapping, got {type(kwargs).__name__}")
    if kind == "argparse":
        return [part for key, value in kwargs.items() for part in (f"--{key}", str(value))]
    if kind == "omegaconf":
        return [f"{key}={value}" for key, value in kwargs.items()]
    raise UsageError(f"{where}: kwargs_type must be argparse or omegaconf when kwargs are given, got {kind!r}")


def load_mlebench_agent(ref: str) -> AgentSpec:
    """The agent ``AGENTS_DIR:AGENT_ID`` as podium runs it (see the module docstring)."""
    folder, _, agent_id = ref.rpartition(":")
    agents_dir = Path(folder).resolve()
    path, entry = _find(agents_dir, agent_id)
    where = f"{path} ({agent_id})"
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown}; MLE-bench's keys are {', '.join(_KEYS)}")
    if entry.get("privileged"):
        raise UsageError(f"{where}: privileged: true; podium never runs an agent privileged. Fix: drop it")
    for key in ("start", "dockerfile"):
        if not isinstance(entry.get(key), str) or not (agents_dir / entry[key]).is_file():
            raise UsageError(f"{where}: {key} must name a file under {agents_dir}, got {entry.get(key)!r}")
    env: dict[str, str] = dict(MLEBENCH_DIRS)
    providers = []
    for name, value in (entry.get("env_vars") or {}).items():
        secret = _SECRET.match(str(value))
        if secret is None:
            env[str(name)] = str(value)
        elif secret.group(1) in _KEY_PROVIDER:
            providers.append(_KEY_PROVIDER[secret.group(1)])
        else:
            raise UsageError(
                f"{where}: env var {name} asks for the secret {secret.group(1)}; podium gives the sandbox no secrets "
                "(model keys reach the provider only through its proxy). Fix: drop it, or pass the value in plain"
            )
    if len(set(providers)) > 1:
        raise UsageError(
            f"{where}: keys of several providers ({', '.join(sorted(set(providers)))}); podium proxies one"
        )
    llm: LLMConfig | None = parse_llm_config({"provider": providers[0], "bridge": False}, where) if providers else None
    start = f"{MLEBENCH_DIRS['AGENT_DIR']}/{Path(entry['start']).name}"
    return AgentSpec(
        name=agent_id.replace("/", "-"),
        folder=(agents_dir / entry["dockerfile"]).parent,
        command=("bash", start, *_kwargs(where, entry.get("kwargs_type"), entry.get("kwargs"))),
        env=env,
        build=(agents_dir / entry["dockerfile"]).parent,
        build_args=dict(MLEBENCH_DIRS),
        llm=llm,
        mlebench=True,
    )

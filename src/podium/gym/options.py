"""``gymnasium.make``'s keyword arguments, checked: each wrong value is one :class:`~podium.errors.UsageError`
line naming it and the fix, raised by ``make`` before anything is written."""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium import registry
from podium.competition import Competition
from podium.errors import PodiumError, UsageError
from podium.gym.rewards import RewardSpec, check_reward
from podium.outputs import output_dir
from podium.units import parse_size

__all__ = [
    "FREE_SPLITS", "KEYWORDS", "LLM_KEYS", "TASKS", "EnvOptions", "check_llm", "check_options", "closest", "is_free",
    "parse_time_limit",
]  # fmt: skip

TASKS = ("sealed", "holdout")
#: The splits whose sealed task needs no ``allow_sealed``: not part of the benchmark's results.
FREE_SPLITS = ("practice", "dev")
_TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Every keyword argument ``make`` takes, in docs/gym.md's order (``render_mode`` is Gymnasium's own: None only).
KEYWORDS = (
    "task", "allow_sealed", "rows", "runs_dir", "run_group", "sandbox", "time_limit", "cpus", "memory", "gpus",
    "max_steps", "max_observation_chars", "reward", "invalid_reward", "model", "llm", "data_dir", "render_mode",
)  # fmt: skip
#: The keys of ``llm=``: the policy's model, its server and its budget.
LLM_KEYS = ("model", "provider", "base_url", "max_cost", "max_answer_tokens", "api_key_env")
#: The providers whose chat completions the policy's proxy relays (``podium rollout --provider``).
_POLICY_PROVIDERS = ("openai", "openrouter")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class EnvOptions:
    """What one environment was made with, checked."""

    competition: Competition
    task: str
    allow_sealed: bool
    rows: int | None
    runs_dir: Path
    run_group: str
    sandbox: str
    time_limit: float
    cpus: float | None
    memory_bytes: int | None
    gpus: int
    max_steps: int
    max_observation_chars: int
    reward: RewardSpec
    reward_kind: str
    invalid_reward: float
    model: str | None
    llm: dict[str, Any] | None
    data_dir: Path


def is_free(competition: Competition) -> bool:
    """Whether the competition's sealed task is free to train on (a practice or dev competition)."""
    return any(competition.id in registry.split_ids(split) for split in FREE_SPLITS)


def parse_time_limit(value: Any) -> float:
    """Seconds from a number or a text like ``1h``, ``90m``, ``30s``, ``2d``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        amount = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        unit = text[-1] if text[-1] in _TIME_UNITS else "s"
        try:
            amount = float(text[:-1] if text[-1] in _TIME_UNITS else text) * _TIME_UNITS[unit]
        except ValueError:
            amount = math.nan
    else:
        amount = math.nan
    if not math.isfinite(amount) or amount <= 0:
        raise UsageError(f"time_limit={value!r} is not a time limit. Fix: pass seconds or a text like '1h', '90m'.")
    return amount


def _positive_int(name: str, value: Any, *, allow_none: bool = False, least: int = 1, example: int = 100) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(
            f"{name}={_shown(value)} must be a whole number of at least {least}. Fix: pass e.g. {name}={example}."
        )
    return value


def _shown(value: Any) -> str:
    """A value as a message quotes it: its repr, cut to 200 characters."""
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def closest(name: str, known: Sequence[str]) -> str | None:
    """The known name ``name`` is most likely a typo of (one it lengthens first: ``max_steps`` for ``max_stepss``)."""
    longer = [k for k in known if name.startswith(k) or (len(name) > 3 and k.startswith(name))]
    close = longer or difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return close[0] if close else None


def _check_keywords(kwargs: dict[str, Any]) -> None:
    for name, value in kwargs.items():
        if name in KEYWORDS:
            continue
        near = closest(str(name), KEYWORDS)
        fix = f"did you mean {near}=?" if near else "drop it."
        if name in LLM_KEYS:  # max_cost=5: a key of llm=
            fix = f"pass it in llm=, e.g. llm={{'model': 'my-policy', {name!r}: {_shown(value)}}}."
        elif name == "seed":
            fix = f"give it to each episode: env.reset(seed={_shown(value)})."
        raise UsageError(
            f"{name}={_shown(value)} is not a keyword argument of podium's environments. Fix: {fix} "
            f"(the keywords: {', '.join(KEYWORDS)})"
        )
    if kwargs.get("render_mode") is not None:
        raise UsageError(
            f"render_mode={_shown(kwargs['render_mode'])}: podium's environments render nothing (their observations "
            "are text). Fix: drop render_mode."
        )


def _path(name: str, value: Any, default: Path | str | None) -> Path | None:
    if value is None:
        return Path(default) if default is not None else None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise UsageError(f"{name}={_shown(value)} is not a folder. Fix: pass a path, e.g. {name}='runs', or None.")
    return Path(value)


def check_llm(raw: Any) -> dict[str, Any] | None:
    """``llm=``, every key's name and type checked (None: no model for the policy); the dict as given."""
    if raw is None:
        return None
    example = "llm={'model': 'my-policy', 'base_url': 'http://127.0.0.1:8000'}"
    if not isinstance(raw, dict):
        raise UsageError(f"llm={_shown(raw)} is not the policy's model access. Fix: pass a dict, e.g. {example}.")
    for key in raw:
        if key not in LLM_KEYS:
            near = closest(str(key), LLM_KEYS)
            fix = f"did you mean {near!r}?" if near else "drop it."
            raise UsageError(f"llm= has the unknown key {_shown(key)}. Fix: {fix} (the keys: {', '.join(LLM_KEYS)})")
    if "model" not in raw:
        raise UsageError(f"llm= names no 'model'. Fix: give the model's name as its server knows it, e.g. {example}.")
    for key, value in raw.items():
        wrong = _llm_value(key, value)
        if wrong is not None:
            raise UsageError(f"llm={{{key!r}: {_shown(value)}}}: {wrong}")
    return raw


def _llm_value(key: str, value: Any) -> str | None:
    """What is wrong with ``llm[key] = value`` and the fix (None: nothing)."""
    if key == "model":
        ok = isinstance(value, str) and bool(value.strip())
        return None if ok else "the model is its name as the server knows it. Fix: e.g. 'model': 'my-policy'."
    if value is None:
        return None
    if key == "provider":
        if isinstance(value, str) and value in _POLICY_PROVIDERS:
            return None
        near = closest(value, _POLICY_PROVIDERS) if isinstance(value, str) else None
        fix = f"did you mean {near!r}?" if near else "'openai' (any OpenAI-compatible server, with its base_url)."
        return f"not a provider of chat completions, which the policy's calls are. Fix: {fix}"
    if key == "base_url":
        from urllib.parse import urlsplit

        parts = urlsplit(value) if isinstance(value, str) else None
        if parts is not None and parts.scheme in ("http", "https") and parts.hostname:
            return None
        return "not an http(s) URL. Fix: e.g. 'base_url': 'http://127.0.0.1:8000'."
    if key == "max_cost":
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and math.isfinite(value) and value > 0:
            return None
        return "the cost budget is a positive number of USD. Fix: e.g. 'max_cost': 5."
    if key == "max_answer_tokens":
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return None
        return "a cap of each answer is a whole number of tokens. Fix: e.g. 'max_answer_tokens': 4096."
    if isinstance(value, str) and _VARIABLE.fullmatch(value):  # api_key_env
        return None
    return "the name of the environment variable that holds the key. Fix: e.g. 'api_key_env': 'VLLM_API_KEY'."


def check_options(competition_ref: str, **kwargs: Any) -> EnvOptions:
    """The checked options of an environment of ``competition_ref`` (``id@version``)."""
    _check_keywords(kwargs)
    competition = registry.get(competition_ref)
    free = is_free(competition)
    task = kwargs.get("task")
    task = ("sealed" if free else "holdout") if task is None else task
    if task not in TASKS:
        raise UsageError(f"task={_shown(task)} is not a task. Fix: pass task='holdout' or task='sealed'.")
    allow_sealed = kwargs.get("allow_sealed", False)
    if not isinstance(allow_sealed, bool):
        raise UsageError(f"allow_sealed={_shown(allow_sealed)} must be True or False. Fix: pass allow_sealed=True.")
    if task == "sealed" and not free and not allow_sealed:
        raise UsageError(
            f"task='sealed' on {competition.id}, a benchmark competition, trains on its sealed test set. Fix: pass "
            "task='holdout' (its public train re-split), or allow_sealed=True (every such episode is recorded)."
        )
    rows = _positive_int("rows", kwargs.get("rows"), allow_none=True, least=2, example=1000)
    if rows is not None and task != "holdout":
        raise UsageError(
            f"rows={rows} shrinks a holdout task's train; task={task!r}. Fix: drop rows or pass task='holdout'."
        )
    reward = kwargs.get("reward", "score")
    reward_kind = check_reward(reward, task)
    sandbox = kwargs.get("sandbox", "bwrap")
    if sandbox not in ("bwrap", "docker", "local"):
        raise UsageError(f"sandbox={_shown(sandbox)} is not a sandbox. Fix: pass sandbox='bwrap' or sandbox='docker'.")
    cpus = kwargs.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not 0 < cpus < math.inf):
        raise UsageError(f"cpus={_shown(cpus)} must be a number of CPU cores above 0. Fix: pass e.g. cpus=2, or None.")
    memory = kwargs.get("memory")
    try:
        memory_bytes = parse_size(memory) if not isinstance(memory, (bool, float)) else -1
    except PodiumError:
        memory_bytes = -1
    if memory_bytes is not None and memory_bytes <= 0:
        raise UsageError(f"memory={_shown(memory)} is not a size. Fix: pass e.g. memory='8G', or None.")
    gpus = _positive_int("gpus", kwargs.get("gpus", 0), least=0, example=1)
    invalid = kwargs.get("invalid_reward", 0.0)
    if isinstance(invalid, bool) or not isinstance(invalid, (int, float)) or not math.isfinite(invalid):
        raise UsageError(
            f"invalid_reward={_shown(invalid)} must be a finite number. Fix: pass e.g. invalid_reward=0.0."
        )
    model = kwargs.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise UsageError(f"model={_shown(model)} is not a model's name. Fix: pass the policy's name, e.g. "
                         "model='my-policy', or None.")  # fmt: skip
    llm = check_llm(kwargs.get("llm"))
    run_group = kwargs.get("run_group")
    run_group = f"gym-{datetime.now(UTC):%Y%m%d}" if run_group is None else run_group
    if not isinstance(run_group, str):
        raise UsageError(f"run_group={_shown(run_group)} is not a run group's name. Fix: pass e.g. run_group='rl-1'.")
    runs_dir = _path("runs_dir", kwargs.get("runs_dir"), "runs")
    data_dir = _path("data_dir", kwargs.get("data_dir"), None)
    time_limit = parse_time_limit(kwargs.get("time_limit", "1h"))
    max_steps = _positive_int("max_steps", kwargs.get("max_steps", 100))
    max_chars = _positive_int("max_observation_chars", kwargs.get("max_observation_chars", 16000), least=200,
                              example=16000)  # fmt: skip
    assert runs_dir is not None and max_steps is not None and max_chars is not None
    output_dir(runs_dir, "runs_dir=")  # a file, or a folder podium cannot write in: refused now, not at the reset
    if data_dir is None:
        from podium.paths import default_data_dir

        data_dir = default_data_dir()
    return EnvOptions(
        competition=competition,
        task=task,
        allow_sealed=allow_sealed,
        rows=rows,
        runs_dir=runs_dir.resolve(),
        run_group=run_group,
        sandbox=sandbox,
        time_limit=time_limit,
        cpus=float(cpus) if cpus is not None else None,
        memory_bytes=memory_bytes,
        gpus=int(gpus or 0),
        max_steps=max_steps,
        max_observation_chars=max_chars,
        reward=reward,
        reward_kind=reward_kind,
        invalid_reward=float(invalid),
        model=model,
        llm=llm,
        data_dir=data_dir.resolve(),
    )

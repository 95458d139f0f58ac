"""``gymnasium.make``'s keyword arguments, checked: each wrong value is one :class:`~podium.errors.UsageError`
line naming it and the fix, raised by ``make`` before anything is written."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium import registry
from podium.competition import Competition
from podium.errors import PodiumError, UsageError
from podium.gym.rewards import RewardSpec, check_reward
from podium.units import parse_size

__all__ = ["FREE_SPLITS", "TASKS", "EnvOptions", "check_options", "is_free", "parse_time_limit"]

TASKS = ("sealed", "holdout")
#: The splits whose sealed task needs no ``allow_sealed``: not part of the benchmark's results.
FREE_SPLITS = ("practice", "dev")
_TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


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


def _positive_int(name: str, value: Any, *, allow_none: bool = False, least: int = 1) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(
            f"{name}={value!r} must be a whole number of at least {least}. Fix: pass e.g. {name}={max(least, 100)}."
        )
    return value


def check_options(competition_ref: str, **kwargs: Any) -> EnvOptions:
    """The checked options of an environment of ``competition_ref`` (``id@version``)."""
    competition = registry.get(competition_ref)
    free = is_free(competition)
    task = kwargs.get("task") or ("sealed" if free else "holdout")
    if task not in TASKS:
        raise UsageError(f"task={task!r} is not a task. Fix: pass task='holdout' or task='sealed'.")
    allow_sealed = bool(kwargs.get("allow_sealed", False))
    if task == "sealed" and not free and not allow_sealed:
        raise UsageError(
            f"task='sealed' on {competition.id}, a benchmark competition, trains on its sealed test set. Fix: pass "
            "task='holdout' (its public train re-split), or allow_sealed=True (every such episode is recorded)."
        )
    rows = _positive_int("rows", kwargs.get("rows"), allow_none=True, least=2)
    if rows is not None and task != "holdout":
        raise UsageError(
            f"rows={rows} shrinks a holdout task's train; task={task!r}. Fix: drop rows or pass task='holdout'."
        )
    reward = kwargs.get("reward", "score")
    reward_kind = check_reward(reward, task)
    sandbox = kwargs.get("sandbox", "bwrap")
    if sandbox not in ("bwrap", "docker", "local"):
        raise UsageError(f"sandbox={sandbox!r} is not a sandbox. Fix: pass sandbox='bwrap' or sandbox='docker'.")
    cpus = kwargs.get("cpus")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not cpus > 0):
        raise UsageError(f"cpus={cpus!r} must be a number of CPU cores above 0. Fix: pass e.g. cpus=2, or None.")
    memory = kwargs.get("memory")
    try:
        memory_bytes = parse_size(memory)
    except PodiumError:
        memory_bytes = -1
    if memory_bytes is not None and memory_bytes <= 0:
        raise UsageError(f"memory={memory!r} is not a size. Fix: pass e.g. memory='8G', or None.")
    gpus = _positive_int("gpus", kwargs.get("gpus", 0), least=0)
    invalid = kwargs.get("invalid_reward", 0.0)
    if isinstance(invalid, bool) or not isinstance(invalid, (int, float)) or not math.isfinite(invalid):
        raise UsageError(f"invalid_reward={invalid!r} must be a finite number. Fix: pass e.g. invalid_reward=0.0.")
    model = kwargs.get("model")
    if model is not None and not isinstance(model, str):
        raise UsageError(f"model={model!r} must be the policy's model name (a string) or None.")
    llm = kwargs.get("llm")
    if llm is not None and not isinstance(llm, dict):
        raise UsageError(f"llm={llm!r} must be a dict with 'model' and 'provider' (and base_url, ...) or None.")
    run_group = kwargs.get("run_group") or f"gym-{datetime.now(UTC):%Y%m%d}"
    data_dir = kwargs.get("data_dir")
    if data_dir is None:
        from podium.paths import default_data_dir

        data_dir = default_data_dir()
    return EnvOptions(
        competition=competition,
        task=task,
        allow_sealed=allow_sealed,
        rows=rows,
        runs_dir=Path(kwargs.get("runs_dir") or "runs").resolve(),
        run_group=str(run_group),
        sandbox=sandbox,
        time_limit=parse_time_limit(kwargs.get("time_limit", "1h")),
        cpus=float(cpus) if cpus is not None else None,
        memory_bytes=memory_bytes,
        gpus=int(gpus or 0),
        max_steps=int(_positive_int("max_steps", kwargs.get("max_steps", 100)) or 100),
        max_observation_chars=int(
            _positive_int("max_observation_chars", kwargs.get("max_observation_chars", 16000), least=200) or 16000
        ),
        reward=reward,
        reward_kind=reward_kind,
        invalid_reward=float(invalid),
        model=model,
        llm=llm,
        data_dir=Path(data_dir).resolve(),
    )

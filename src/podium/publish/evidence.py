"""What ``podium bundle verify`` checks of each record beyond its grade: every field a report reads, against
the evidence the bundle carries, never against the record's own word.

- :func:`check_place`: the run's ``run_group``, ``competition_id`` and ``seed`` are its place in the bundle;
- :func:`check_group`: the agent, its folder's hash, the sandbox, the limits, the environment and the model are
  those of the run's group (``runs/<group>/group.json``), which lists the run's competition;
- :func:`check_agent`: the agent's name is the one its folder's ``agent.yaml`` gives, where the bundle carries
  that folder (the folder's hash is the ``integrity`` audit check's);
- :func:`check_llm`: the model calls, tokens and cost are those ``llm_calls.jsonl`` lists;
- :func:`check_times`: the agent's seconds agree with its resource samples (``resources.jsonl``), with when the
  run started and ended and with its time limit; the compute used is the agent's result; what it was given is
  within its limits.

What the bundle holds no evidence for is :data:`BUNDLES_WORD`: a signature (``bundle create --sign``) is how an
author vouches for it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from podium.publish.unpack import shown
from podium.untrusted import iter_json_lines, read_bounded

__all__ = [
    "BUNDLES_WORD",
    "agent_name",
    "check_agent",
    "check_group",
    "check_holdout",
    "check_llm",
    "check_place",
    "check_times",
    "group_problem",
    "holdout",
]

#: What a report reads that the bundle carries no evidence for: verify takes it on the bundle's word.
BUNDLES_WORD = (
    "which runs and competitions each group holds (a run or a competition left out leaves no trace), the machine "
    "(CPU model, host, and the CPUs, memory and GPUs given below the caps), the GPU-hours read from nvidia-smi, "
    "when each run started and ended, how its agent ended (its status and exit code), and the description it was "
    "given"
)
#: The limits a record's ``limits`` shares with its group's settings.
_LIMITS = ("time_limit_s", "memory_bytes", "cpus", "gpus", "disk_bytes")
#: The group settings (``group.json``'s, :data:`podium.run.group.SETTINGS`) a record is held to.
_SETTINGS = ("agent", "agent_hash", "sandbox", "environment", *_LIMITS, "model")
#: The most a log read here may hold (llm_calls.jsonl, resources.jsonl), and each of its lines.
_MAX_LOG = 256 << 20
_MAX_LINE = 1 << 20
_MAX_AGENT_YAML = 1 << 20
_Differ = Callable[[str], None]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _said(value: Any) -> str:
    return shown(json.dumps(value, sort_keys=True, default=str), 80)


def holdout(record: Mapping[str, Any]) -> bool:
    """Whether the run is a gym ``holdout`` episode: graded against podium's re-split of the public train."""
    gym = record.get("gym")
    return isinstance(gym, dict) and gym.get("task") == "holdout"


def check_holdout(where: str, record: Mapping[str, Any], differ: _Differ) -> None:
    """A holdout episode is not graded again here (its answers are podium's re-split of the public train, which
    verify does not rebuild yet), so its grade must be one a holdout gives: a score, no placement and no medal."""
    grade = record.get("grade")
    if not isinstance(grade, dict):
        return
    placed = [k for k in ("any_medal", "gold_medal", "silver_medal", "bronze_medal", "above_median") if grade.get(k)]
    placed += [k for k in ("percentile", "rank", "gold_threshold", "median_threshold") if grade.get(k) is not None]
    board = grade.get("leaderboard")
    if placed or not (isinstance(board, str) and board.startswith("holdout:")):
        differ(
            f"{where}: its record says it is a holdout episode (gym.task), but its grade is not a holdout grade's "
            f"(a score alone): {', '.join(placed) or f'leaderboard {_said(board)}'}"
        )


def check_place(where: str, place: str, record: Mapping[str, Any], differ: _Differ) -> None:
    """The record's ``run_group``, ``competition_id`` and ``seed`` must be its place, ``runs/GROUP/ID/SEED``."""
    _, group, competition, seed = place.split("/")
    for key, expected in (("run_group", group), ("competition_id", competition), ("seed", seed)):
        value = record.get(key)
        text = str(value) if key != "seed" or (type(value) is int and value >= 0) else None
        if text != expected:
            differ(f"{where}: its record says {key} {_said(value)}, its place in the bundle {shown(expected)}")


def group_problem(group: str, document: Mapping[str, Any]) -> str | None:
    """What makes a bundled ``group.json`` no evidence for its runs (None when nothing does): another group's
    name, or settings that leave out one that :func:`check_group` compares."""
    if document.get("run_group") != group:
        return f"names the group {_said(document.get('run_group'))}"
    settings = document.get("settings")
    missing = [k for k in _SETTINGS if not isinstance(settings, dict) or k not in settings]
    return f"its settings do not say {', '.join(missing)}" if missing else None


def check_group(
    where: str, record: Mapping[str, Any], group: Mapping[str, Any] | None, differ: _Differ
) -> Mapping[str, Any]:
    """The record's settings against its group's ``group.json`` (read by the caller; None when the bundle holds
    none, a difference the caller reports once a group). Returns the group's settings ({} without them)."""
    if group is None:
        return {}
    settings = group.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    limits = record.get("limits")
    limits = limits if isinstance(limits, dict) else {}
    environment = record.get("environment")
    mine = {
        "agent": record.get("agent"),
        "agent_hash": record.get("agent_hash"),
        "sandbox": record.get("sandbox"),
        "environment": environment.get("digest") if isinstance(environment, dict) else None,
        **{key: limits.get(key) for key in _LIMITS},
    }
    for key, value in mine.items():
        if key in settings and not _equal(value, settings[key]):
            where_in = key if key not in _LIMITS else f"limits.{key}"
            differ(f"{where}: {where_in} {_said(value)} in the record, {_said(settings[key])} in its group.json")
    asked = group.get("competitions")
    if isinstance(asked, list) and record.get("competition_id") not in asked:
        differ(f"{where}: its group.json does not list {_said(record.get('competition_id'))} among its competitions")
    return settings


def _close(theirs: Any, value: Any, tolerance: float) -> bool:
    """Whether a record's figure is the one worked out from the evidence (both None, or numbers close)."""
    if theirs is None or value is None:
        return theirs is None and value is None
    x, y = _number(theirs), _number(value)
    return x is not None and y is not None and math.isclose(x, y, rel_tol=1e-6, abs_tol=tolerance)


def _equal(a: Any, b: Any) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9)
    return type(a) is type(b) and a == b


def agent_name(folder: Path) -> str | None:
    """The ``name`` an agent folder's ``agent.yaml`` gives (None where it gives none, or cannot be read)."""
    import yaml

    data = read_bounded(folder / "agent.yaml", _MAX_AGENT_YAML)
    try:
        raw = yaml.safe_load(data) if data is not None else None
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    name = raw.get("name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) else None


def check_agent(where: str, record: Mapping[str, Any], name: str | None, differ: _Differ) -> None:
    """The record's agent is the one its folder's ``agent.yaml`` names (``name``: from the bundle's folder of the
    record's ``agent_hash``, once that folder hashes to it; None where it cannot be known)."""
    if name is not None and record.get("agent") != name:
        differ(
            f"{where}: agent {_said(record.get('agent'))} in the record, {shown(name)} in its agent folder's agent.yaml"
        )


def _lines(path: Path, what: str, differ: _Differ) -> Iterator[dict[str, Any]] | None:
    """The JSON lines of a log in the unpacked bundle (None when there is none); a line that is not an object is
    a difference."""
    if not path.is_file():
        return None
    if path.stat().st_size > _MAX_LOG:
        differ(f"{what}: larger than {_MAX_LOG >> 20} MiB, not read")
        return iter(())

    def read() -> Iterator[dict[str, Any]]:
        with open(path, "rb") as handle:
            for number, entry in enumerate(iter_json_lines(handle, max_line=_MAX_LINE), start=1):
                if entry is None:
                    differ(f"{what}: line {number} is not a JSON object")
                    continue
                yield entry

    return read()


def _model_of(llm: Mapping[str, Any]) -> str:
    """The model as a group's settings name it (:func:`podium.run.group._model`), from a record's ``llm``."""
    models = llm.get("models")
    names = ",".join(str(v) for v in models.values()) if isinstance(models, dict) else ""
    return f"{llm.get('provider')}:{names or 'any'}@{llm.get('base_url')}"


def check_llm(
    where: str, record: Mapping[str, Any], run_dir: Path, settings: Mapping[str, Any], differ: _Differ
) -> None:
    """The record's ``llm`` (calls, refusals, tokens, cost, the model) against ``llm_calls.jsonl`` and the group's
    model: a call the log lists is a call, whatever the record says."""
    llm = record.get("llm")
    entries = _lines(run_dir / "llm_calls.jsonl", f"{where}: llm_calls.jsonl", differ)
    counted = {"calls": 0, "refused": 0, "input_tokens": 0, "output_tokens": 0}
    cost, priced, unpriced = 0.0, 0, 0
    for entry in entries or ():
        counted["refused" if "refused" in entry else "calls"] += 1
        for key in ("input_tokens", "output_tokens"):
            counted[key] += int(_number(entry.get(key)) or 0)
        price = _number(entry.get("cost_usd"))
        cost += price or 0.0
        if isinstance(entry.get("status"), int) and 200 <= entry["status"] < 300:
            priced, unpriced = priced + (price is not None), unpriced + (price is None)
    model = settings.get("model")
    if not isinstance(llm, dict):
        if counted["calls"] or counted["refused"]:
            differ(f"{where}: llm {_said(llm)} in the record, {counted['calls']} call(s) in llm_calls.jsonl")
        elif model is not None and record.get("status") == "finished":
            differ(f"{where}: llm {_said(llm)} in the record, but its group.json names the model {_said(model)}")
        return
    if "model" in settings and model is None:
        differ(f"{where}: llm {_said(llm)} in the record, but its group.json names no model")
        return
    if "model" in settings and model != _model_of(llm):
        differ(f"{where}: llm's model {shown(_model_of(llm), 120)} in the record, {_said(model)} in its group.json")
    if entries is None and (_number(llm.get("calls")) or _number(llm.get("refused"))):
        differ(f"{where}: llm calls {_said(llm.get('calls'))} in the record, and no llm_calls.jsonl in the bundle")
        return
    counted_cost = None if unpriced and not priced else round(cost, 9)
    for key, value in [*counted.items(), ("cost_usd", counted_cost)]:
        theirs = llm.get(key)
        if not _close(theirs, value, 1e-9 * (counted["calls"] + 1)):
            differ(f"{where}: llm {key} {_said(theirs)} in the record, {_said(value)} from llm_calls.jsonl")


def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def check_times(where: str, record: Mapping[str, Any], run_dir: Path, differ: _Differ) -> None:
    """The agent's seconds against its resource samples, its start and end and its time limit; the compute used
    against the agent's result; the compute given within the limits."""
    result, limits = record.get("agent_result"), record.get("limits")
    limits = limits if isinstance(limits, dict) else {}
    if not isinstance(result, dict):
        return
    seconds = _number(result.get("seconds"))
    if seconds is None:
        differ(f"{where}: agent_result.seconds {_said(result.get('seconds'))} in the record is not a number")
        return
    said = f"{where}: agent_result.seconds {seconds:g} in the record"
    started, finished = _time(record.get("started_at")), _time(record.get("finished_at"))
    if started is not None and finished is not None and seconds > (finished - started).total_seconds() + 2:
        differ(f"{said}, but it started at {shown(record['started_at'])} and ended at {shown(record['finished_at'])}")
    _check_samples(said, seconds, result, run_dir, differ)
    limit = _number(limits.get("time_limit_s"))
    if limit is not None and seconds > limit * 1.01 + 10:  # killed at the limit: its processes reaped within 5 s
        differ(f"{said}, past its time limit of {limit:g} s")
    if limit is not None and result.get("killed_for") == "time" and seconds < limit * 0.98 - 1:
        differ(f"{said}: stopped at its time limit of {limit:g} s before reaching it")
    _check_compute(where, record.get("compute"), result, limits, differ)


def _check_samples(said: str, seconds: float, result: Mapping[str, Any], run_dir: Path, differ: _Differ) -> None:
    """The seconds lie within the sampling's stride of the last sample ``resources.jsonl`` holds (a sample a
    second, the stride doubling as a long run's log fills), and every sample the record keeps is one of them."""
    where = said.split(":")[0]
    entries = _lines(run_dir / "resources.jsonl", f"{where}: resources.jsonl", differ)
    kept = result.get("samples")
    kept = [s for s in kept if isinstance(s, dict)] if isinstance(kept, list) else []
    if entries is None:
        if kept:
            differ(f"{where}: the record keeps {len(kept)} resource sample(s), the bundle no resources.jsonl")
        return
    logged = {(s.get("t"), s.get("cpu_seconds"), s.get("rss_bytes")) for s in entries}
    last = max((x for x in (_number(t) for t, _, _ in logged) if x is not None), default=None)
    if last is not None and not last - 1 <= seconds <= last + 5 + seconds / 900:
        differ(f"{said}, the last resource sample in resources.jsonl at {last:g} s")
    missing = [s for s in kept if (s.get("t"), s.get("cpu_seconds"), s.get("rss_bytes")) not in logged]
    if missing:
        differ(f"{where}: {len(missing)} of the record's resource samples are not in resources.jsonl")


def _check_compute(
    where: str, compute: Any, result: Mapping[str, Any], limits: Mapping[str, Any], differ: _Differ
) -> None:
    if not isinstance(compute, dict):
        return
    used = compute.get("used")
    used = used if isinstance(used, dict) else {}
    cpu = _number(result.get("cpu_seconds"))
    samples = result.get("samples")
    if cpu is None and isinstance(samples, list) and samples and isinstance(samples[-1], dict):
        cpu = _number(samples[-1].get("cpu_seconds"))
    expected = {
        "wall_seconds": round(float(result["seconds"]), 3),
        "cpu_seconds": round(cpu, 3) if cpu is not None else None,
        "peak_memory_bytes": result.get("peak_memory_bytes"),
    }
    for key, value in expected.items():
        theirs = used.get(key)
        if not _close(theirs, value, 2e-3):
            differ(f"{where}: compute.used.{key} {_said(theirs)} in the record, {_said(value)} in its agent_result")
    if compute.get("gpu_count") != limits.get("gpus"):
        differ(f"{where}: compute.gpu_count {_said(compute.get('gpu_count'))}, limits.gpus {_said(limits.get('gpus'))}")
    for key in ("cpus", "memory_bytes"):
        given, cap = _number(compute.get(key)), _number(limits.get(key))
        if cap is not None and (given is None or given > cap * (1 + 1e-9)):
            differ(f"{where}: compute.{key} {_said(compute.get(key))} given, more than its cap limits.{key} {cap:g}")

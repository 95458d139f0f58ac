"""Episodes as training data: ``podium trajectories export`` reads landed episodes and writes one row each.

An episode's run folder holds what it takes (:mod:`podium.gym` writes the first two, the rollout the third):

- ``record.json``: the run's record, with ``gym`` (task, model, reward, terminated/truncated, exposed, ...);
- ``gym_steps.jsonl``: one line per step, the reset as step 0 (the observation the policy first saw);
- ``gym_messages.jsonl`` (episodes played by :mod:`podium.gym.rollout`): the conversation as the model had it,
  one chat message a line, assistant turns with their ``tool_calls`` (and ``logprobs`` where asked for);
- ``audit.json`` where the run was audited.

A row is the episode in OpenAI's chat format (``messages``: system, user, assistant with ``tool_calls``,
``tool``), so TRL's SFT trainer takes it as a conversational example, with its reward and what a trainer
filters on beside it. For an episode without ``gym_messages.jsonl`` (a scripted policy's), the messages are
built from the steps: the first observation as the user's turn, each action as an assistant tool call, each
observation as the tool's answer. Every file is read as hostile input (no link followed, bounded, JSON bounded).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.untrusted import iter_json_lines, loads_object, printable, read_bounded

__all__ = ["MESSAGES_FILE", "STEPS_FILE", "TRAJECTORY_FIELDS", "episode_dirs", "export", "trajectory"]

STEPS_FILE = "gym_steps.jsonl"
MESSAGES_FILE = "gym_messages.jsonl"
#: The largest record, steps log or message log read (the rest of a longer one is not read: the row says so).
_MAX_LOG = 256 << 20
_MAX_RECORD = 16 << 20
_MAX_DEPTH_WALK = 4  # RUNS/<group>/<competition>/<seed>/record.json
#: A row's fields, in order (docs/gym.md describes each).
TRAJECTORY_FIELDS = (
    "id", "run_group", "competition_id", "competition_version", "env_id", "task", "seed", "model", "messages",
    "tools_json", "reward", "terminated", "truncated", "steps", "step_count", "score", "valid_submission",
    "medal", "percentile", "grade_json", "audit_verdict", "exposed", "logprobs", "status", "complete",
)  # fmt: skip
_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def episode_dirs(roots: Sequence[Path]) -> list[Path]:
    """The run folders of gym episodes under ``roots`` (a runs folder, a run group, or one run), in a stable order.

    A folder counts when it holds a ``record.json`` (not a link) whose record has a ``gym`` section; folders are
    walked without following links, at most the depth of a runs folder, names starting with ``.`` skipped."""
    found: list[Path] = []
    for root in roots:
        if not root.is_dir() or root.is_symlink():
            raise UsageError(f"{printable(str(root))}: not a folder of runs; name a runs folder, a run group or a run")
        for folder in _walk(root, _MAX_DEPTH_WALK):
            record = _record(folder)
            if record is not None and isinstance(record.get("gym"), dict):
                found.append(folder)
    return sorted(set(found))


def _walk(folder: Path, depth: int) -> Iterator[Path]:
    yield folder
    if depth == 0:
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
            yield from _walk(Path(entry.path), depth - 1)


def _record(folder: Path) -> dict[str, Any] | None:
    return _parsed(read_bounded(folder / "record.json", _MAX_RECORD, single_link=True))


def _parsed(data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        return loads_object(data, max_bytes=_MAX_RECORD, what="record.json")
    except ValueError:
        return None


def _lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a log in the episode's folder; a line that is not one is left out."""
    data = read_bounded(path, _MAX_LOG, single_link=True)
    if not data:
        return []
    return [line for line in iter_json_lines(data.splitlines()) if line is not None]


def _step_number(line: Mapping[str, Any]) -> int:
    number = line.get("step")
    return number if isinstance(number, int) else 0


def trajectory(folder: Path) -> dict[str, Any]:
    """One episode's row (:data:`TRAJECTORY_FIELDS`)."""
    data = read_bounded(folder / "record.json", _MAX_RECORD, single_link=True)
    record = _parsed(data)
    if data is None or record is None or not isinstance(record.get("gym"), dict):
        raise UsageError(f"{printable(str(folder))}: not a gym episode (no record.json with a gym section)")
    gym: dict[str, Any] = record["gym"]
    steps = sorted(_lines(folder / STEPS_FILE), key=_step_number)
    logged = _lines(folder / MESSAGES_FILE)
    messages, logprobs = _from_log(logged, steps) if logged else (_from_steps(steps), None)
    grade = record.get("grade") if isinstance(record.get("grade"), dict) else None
    actions = [s for s in steps if s.get("tool") != "reset"]
    return {
        "id": _episode_id(record, data),
        "run_group": _text(record.get("run_group")),
        "competition_id": _text(record.get("competition_id")),
        "competition_version": _integer(record.get("competition_version")),
        "env_id": _text(gym.get("env_id")),
        "task": _text(gym.get("task")),
        "seed": _integer(record.get("seed")),
        "model": _text(gym.get("model")),
        "messages": messages,
        "tools_json": _tools_json(steps),
        "reward": _number(gym.get("reward")),
        "terminated": bool(gym.get("terminated")),
        "truncated": bool(gym.get("truncated")),
        "steps": [_step_row(s) for s in actions],
        "step_count": len(actions),
        "score": _number((grade or {}).get("score")),
        "valid_submission": (grade or {}).get("valid_submission") is True,
        "medal": _medal(grade),
        "percentile": _number((grade or {}).get("percentile")),
        "grade_json": json.dumps(grade) if grade is not None else None,
        "audit_verdict": _audit_verdict(folder),
        "exposed": [str(e) for e in gym.get("exposed") or []],
        "logprobs": logprobs,
        "status": _text(record.get("status")),
        "complete": bool(steps) and (bool(gym.get("terminated")) or bool(gym.get("truncated"))),
    }


def _episode_id(record: Mapping[str, Any], data: bytes) -> str:
    """``GROUP/COMPETITION/SEED/DIGEST``, the digest the first 12 hex digits of the record's sha256: the same
    episode keeps its id wherever it is read from (a copy, a bundle's tree); two episodes of one group, competition
    and seed (in two runs folders, or a seed played again) never share one."""
    digest = hashlib.sha256(data).hexdigest()[:12]
    return f"{record.get('run_group')}/{record.get('competition_id')}/{record.get('seed')}/{digest}"


def _tools_json(steps: Sequence[Mapping[str, Any]]) -> str | None:
    """The tools the episode offered the policy, as its reset logged them (None where it logged none: episodes
    from before podium kept them)."""
    tools = next((s.get("tools") for s in steps if s.get("tool") == "reset"), None)
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return None
    return json.dumps(tools, ensure_ascii=False)


def _from_steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation of a policy that logged no messages: the first observation, then each action as an
    assistant tool call answered by its observation."""
    messages: list[dict[str, Any]] = []
    for step in steps:
        if step.get("tool") == "reset":
            messages.append(_message("user", _text(step.get("observation")) or ""))
            continue
        call_id = _text(step.get("call_id")) or f"call_{_integer(step.get('step'))}"
        arguments = step.get("arguments") if isinstance(step.get("arguments"), dict) else {}
        call = {"id": call_id, "type": "function",
                "function": {"name": _text(step.get("tool")) or "", "arguments": json.dumps(arguments)}}  # fmt: skip
        messages.append(_message("assistant", "", tool_calls=[call]))
        messages.append(_message("tool", _text(step.get("observation")) or "", tool_call_id=call_id))
    return messages


def _from_log(
    logged: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[Any]]:
    """The rollout's own log of the conversation, each assistant turn's log-probabilities apart (None where not
    asked for), and the answer to each tool call the log ends on (the step that ended the episode) from the steps."""
    messages: list[dict[str, Any]] = []
    logprobs: list[Any] = []
    answered: set[str] = set()
    for entry in logged:
        role = _text(entry.get("role"))
        if role not in {"system", "user", "assistant", "tool"}:
            continue
        calls = entry.get("tool_calls") if isinstance(entry.get("tool_calls"), list) else None
        message = _message(role, _text(entry.get("content")) or "", tool_calls=_calls(calls),
                           tool_call_id=_text(entry.get("tool_call_id")))  # fmt: skip
        messages.append(message)
        if role == "assistant":
            logprobs.append(_token_logprobs(entry.get("logprobs")))
        if role == "tool" and message["tool_call_id"]:
            answered.add(message["tool_call_id"])
    by_call = {_text(s.get("call_id")): s for s in steps if s.get("call_id")}
    pending = [c["id"] for m in messages if m["tool_calls"] for c in m["tool_calls"] if c["id"] not in answered]
    for call_id in pending:
        step = by_call.get(call_id)
        if step is not None:
            messages.append(_message("tool", _text(step.get("observation")) or "", tool_call_id=call_id))
    return messages, logprobs


def _token_logprobs(value: Any) -> dict[str, list[Any]] | None:
    """An assistant turn's log-probabilities as OpenAI's ``choices[0].logprobs`` gives them, reduced to its tokens
    and their log-probabilities (None where none were asked for or the server sent none)."""
    content = value.get("content") if isinstance(value, dict) else None
    if not isinstance(content, list):
        return None
    tokens = [t for t in content if isinstance(t, dict)]
    return {"tokens": [_text(t.get("token")) or "" for t in tokens],
            "logprobs": [_number(t.get("logprob")) for t in tokens]}  # fmt: skip


def _medal(grade: Mapping[str, Any] | None) -> str | None:
    if grade is None:
        return None
    return next((m for m in ("gold", "silver", "bronze") if grade.get(f"{m}_medal") is True), None)


def _calls(calls: list[Any] | None) -> list[dict[str, Any]] | None:
    if not calls:
        return None
    shaped = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            continue
        function = call["function"]
        arguments = function.get("arguments")
        shaped.append({
            "id": _text(call.get("id")) or "",
            "type": "function",
            "function": {"name": _text(function.get("name")) or "",
                         "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        })  # fmt: skip
    return shaped or None


def _message(
    role: str, content: str, *, tool_calls: list[dict[str, Any]] | None = None, tool_call_id: str | None = None
) -> dict[str, Any]:
    """A chat message with every key of :data:`_MESSAGE_KEYS` (Parquet wants one shape for every message)."""
    return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id, "name": None}


def _step_row(step: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "step": _integer(step.get("step")),
        "tool": _text(step.get("tool")),
        "exit_code": _integer(step.get("exit_code")),
        "elapsed_s": _number(step.get("elapsed_s")),
        "step_s": _number(step.get("step_s")),
        "cpu_s": _number(step.get("cpu_s")),
        "max_rss_bytes": _integer(step.get("max_rss_bytes")),
        "error": _text(step.get("error")),
    }


def _audit_verdict(folder: Path) -> str | None:
    data = read_bounded(folder / "audit.json", _MAX_RECORD, single_link=True)
    if data is None:
        return None
    try:
        verdict = loads_object(data, max_bytes=_MAX_RECORD, what="audit.json").get("verdict")
    except ValueError:
        return None
    return verdict if isinstance(verdict, str) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def export(roots: Sequence[Path], out: Path, fmt: str = "jsonl", *, progress: Any = None) -> int:
    """Write one row per episode found under ``roots`` to ``out`` (``jsonl`` or ``parquet``), atomically (a
    temporary file renamed into place); returns the number of rows."""
    if fmt not in ("jsonl", "parquet"):
        raise UsageError(f"--format {fmt!r}: not a trajectory format; use jsonl or parquet")
    folders = episode_dirs(roots)
    if not folders:
        shown = ", ".join(printable(str(r)) for r in roots)
        raise UsageError(f"no gym episodes under {shown}: run some with gymnasium.make('podium/...') or podium rollout")
    rows = (_tracked(trajectory(f), progress) for f in folders)
    temporary = out.with_name(f".{out.name}.partial")
    try:
        count = _write_jsonl(rows, temporary) if fmt == "jsonl" else _write_parquet(rows, temporary)
        os.replace(temporary, out)
    except OSError as error:  # a full disk, a folder made read-only meanwhile: one line, nothing half-written
        reason = error.strerror or type(error).__name__
        raise UsageError(f"cannot write {printable(str(out))} ({reason}); pick a folder you can write in") from None
    finally:
        with contextlib.suppress(OSError):  # never made (a read-only folder): the error above is the one to see
            temporary.unlink(missing_ok=True)
    return count


def _tracked(row: dict[str, Any], progress: Any) -> dict[str, Any]:
    if progress is not None:
        progress(row["id"])
    return row


def _write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def _write_parquet(rows: Iterable[dict[str, Any]], path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(list(rows), schema=_schema(pa))
    pq.write_table(table, path)
    return table.num_rows


def _schema(pa: Any) -> Any:
    """One schema for every row, so files of different episodes concatenate."""
    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)),
                         ("tool_call_id", pa.string()), ("name", pa.string())])  # fmt: skip
    step = pa.struct([("step", pa.int64()), ("tool", pa.string()), ("exit_code", pa.int64()),
                      ("elapsed_s", pa.float64()), ("step_s", pa.float64()), ("cpu_s", pa.float64()),
                      ("max_rss_bytes", pa.int64()), ("error", pa.string())])  # fmt: skip
    turn = pa.struct([("tokens", pa.list_(pa.string())), ("logprobs", pa.list_(pa.float64()))])
    types = {
        "id": pa.string(), "run_group": pa.string(), "competition_id": pa.string(), "competition_version": pa.int64(),
        "env_id": pa.string(), "task": pa.string(), "seed": pa.int64(), "model": pa.string(),
        "messages": pa.list_(message), "tools_json": pa.string(), "reward": pa.float64(), "terminated": pa.bool_(),
        "truncated": pa.bool_(), "steps": pa.list_(step), "step_count": pa.int64(), "score": pa.float64(),
        "valid_submission": pa.bool_(), "medal": pa.string(), "percentile": pa.float64(), "grade_json": pa.string(),
        "audit_verdict": pa.string(), "exposed": pa.list_(pa.string()), "logprobs": pa.list_(turn),
        "status": pa.string(), "complete": pa.bool_(),
    }  # fmt: skip
    return pa.schema([(name, types[name]) for name in TRAJECTORY_FIELDS])

"""Rollouts with a model: a plain tool-calling loop that plays podium's gym episodes and lands them as runs.

This is what a trainer serving its policy (vLLM, llama.cpp, any OpenAI-compatible server, or a provider) calls
to collect episodes: ``podium rollout --model M --base-url URL --competitions ... --episodes K``. Each episode is
``gymnasium.make("podium/<id>-v<version>", llm=...)``: the environment starts podium's LLM proxy for the policy,
so every call is metered (tokens, cost, the budget of ``--max-cost``) and kept in the run's transcript. The loop
sends the conversation with the environment's tools (OpenAI function format), runs each tool call the model makes
as one step, answers it with the step's observation, and stops when the episode ends (``submit``, or the step or
time budget). A reply without a tool call is answered with a reminder; after :data:`IDLE_REPLIES` such replies in
a row the loop submits what is in place.

The conversation as the model had it is written, one message a line, to the episode's ``gym_messages.jsonl``
(assistant turns with their ``tool_calls`` and, with ``logprobs``, the server's token log-probabilities), which
``podium trajectories export`` turns into training rows. It is the model server's text, so each line is written by
:func:`podium.gym.episode.json_line` (a lone surrogate as the text ``\\ud800``).

A batch resumes: the seeds its run group holds already (an episode landed, whatever its reward; not one landed as a
harness error) are not played again, as ``--cluster`` decides (:func:`pending`), and the group is held for the batch
(a second batch on it is refused). Ctrl-C discards the episode in progress (:meth:`podium.gym.env.PodiumEnv.discard`:
nothing landed, no staging folder left), so the same command again plays it from its reset. An episode that fails
for the harness's sake is said in one line and the batch goes on.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from podium.errors import HarnessError, PodiumError, UsageError
from podium.gym.episode import json_line
from podium.gym.trajectories import MESSAGES_FILE
from podium.untrusted import loads_object, printable

__all__ = ["IDLE_REPLIES", "SYSTEM_PROMPT", "EpisodeResult", "RolloutSettings", "pending", "play_episode", "rollout"]

#: Replies without a tool call in a row after which the loop submits what is in place.
IDLE_REPLIES = 3
#: The largest answer read from the model server through the proxy.
_MAX_ANSWER = 64 << 20
SYSTEM_PROMPT = (
    "You are an expert machine-learning engineer working alone on a Kaggle-style competition inside a sandbox "
    "without internet access. Work only through the tools: `bash` runs a command in a shell whose working folder and "
    "files persist between calls, `write_file` writes a file, and `submit` ends the episode and grades "
    "/home/submission/submission.csv. Explore the data, write and run code, read errors and fix them, validate your "
    "submission, and submit before the time or step budget runs out. Call one tool per turn."
)
_REMINDER = "Call one of the tools (bash, write_file or submit); plain text does nothing here."


@dataclass
class RolloutSettings:
    """What ``podium rollout`` was asked for (the environment's keyword arguments, and the loop's own)."""

    model: str
    competitions: Sequence[str]
    episodes: int = 1
    provider: str = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    task: str | None = None
    allow_sealed: bool = False
    rows: int | None = None
    runs_dir: str = "runs"
    run_group: str | None = None
    time_limit: str | None = None
    max_steps: int | None = None
    max_cost: float | None = None
    max_answer_tokens: int | None = None
    logprobs: bool = False
    temperature: float | None = None
    sandbox: str = "bwrap"
    cpus: float | None = None
    memory: str | int | None = None
    gpus: int | None = None
    first_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def env_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``gymnasium.make`` for one of these episodes."""
        llm = {"model": self.model, "provider": self.provider, "base_url": self.base_url,
               "api_key_env": self.api_key_env, "max_cost": self.max_cost,
               "max_answer_tokens": self.max_answer_tokens}  # fmt: skip
        kwargs: dict[str, Any] = {"model": self.model, "llm": {k: v for k, v in llm.items() if v is not None},
                                  "runs_dir": self.runs_dir, "sandbox": self.sandbox,
                                  "allow_sealed": self.allow_sealed}  # fmt: skip
        optional = {"task": self.task, "rows": self.rows, "run_group": self.run_group, "time_limit": self.time_limit,
                    "max_steps": self.max_steps, "cpus": self.cpus, "memory": self.memory, "gpus": self.gpus}  # fmt: skip
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        kwargs.update(self.extra)
        return kwargs


@dataclass
class EpisodeResult:
    """How one episode ended, for the progress line and the command's summary."""

    competition_id: str
    seed: int
    reward: float
    terminated: bool
    truncated: bool
    steps: int
    model_calls: int
    run_dir: str | None
    ended: str
    valid: bool = False


class _ChatClient:
    """Chat completions through the episode's proxy (``info["llm_base_url"]``): one POST per turn, no retries
    (the proxy already meters and refuses; a refusal ends the episode's model side)."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise HarnessError(f"the environment gave the policy an address podium cannot call: {base_url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = parts.path.rstrip("/") + "/chat/completions"
        self.timeout = timeout

    def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            payload = json.dumps(body).encode()
            connection.request("POST", self.path, payload, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            data = answer.read(_MAX_ANSWER + 1)
        finally:
            connection.close()
        if answer.status != 200:
            raise _ModelRefused(f"the model's call answered {answer.status}: {_error_text(data)}")
        if len(data) > _MAX_ANSWER:
            raise _ModelRefused(f"the model's answer is over {_MAX_ANSWER} bytes")
        try:
            return loads_object(data, max_bytes=_MAX_ANSWER, what="the model's answer")
        except ValueError as error:
            raise _ModelRefused(str(error)) from None


class _ModelRefused(Exception):
    """The model could not be asked (a refusal of the proxy: budget, size; a server error)."""


def _error_text(data: bytes) -> str:
    try:
        error = loads_object(data, max_bytes=1 << 20).get("error")
    except ValueError:
        return printable(data[:200].decode("utf-8", "replace"))
    message = error.get("message") if isinstance(error, dict) else error
    return printable(str(message)[:300])


class _MessageLog:
    """``gym_messages.jsonl`` in the episode's folder, appended a message at a time (podium writes it; the run's
    root is outside every folder the sandbox can write)."""

    def __init__(self, run_dir: str | None) -> None:
        self.fd: int | None = None
        if run_dir:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
            self.fd = os.open(Path(run_dir) / MESSAGES_FILE, flags, 0o644)

    def add(self, message: Mapping[str, Any]) -> None:
        if self.fd is not None:
            os.write(self.fd, (json_line(message) + "\n").encode())

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def play_episode(env: Any, seed: int, settings: RolloutSettings, *, call_timeout: float = 600.0) -> EpisodeResult:
    """Play one episode of ``env`` (a podium gym environment made with ``llm=``) with the model, to its end."""
    observation, info = env.reset(seed=seed)
    base_url = info.get("llm_base_url")
    if not base_url:
        raise UsageError("the environment was made without llm=: podium rollout needs the model's proxy")
    client = _ChatClient(str(base_url), call_timeout)
    log = _MessageLog(info.get("staging_dir") or info.get("run_dir"))
    messages: list[dict[str, Any]] = []
    calls = steps = idle = 0
    reward, terminated, truncated, ended = 0.0, False, False, "submitted"
    final: dict[str, Any] = {}

    def say(message: dict[str, Any], logprobs: Any = None) -> None:
        messages.append(message)
        log.add({**message, "logprobs": logprobs} if logprobs is not None else message)

    try:
        say({"role": "system", "content": SYSTEM_PROMPT})
        say({"role": "user", "content": observation})
        while not (terminated or truncated):
            try:
                answer = client.complete(_request(settings, messages, info["tools"]))
                calls += 1
                reply, logprobs = _reply(answer)
            except _ModelRefused as refusal:
                ended = f"model stopped: {refusal}"
                action: Any = {"tool": "submit"}  # what is in place is graded, as when the time runs out
                observation, reward, terminated, truncated, final = env.step(action)
                steps += 1
                break
            say(reply, logprobs)
            tool_calls = reply.get("tool_calls") or []
            if not tool_calls:
                idle += 1
                if idle < IDLE_REPLIES:
                    say({"role": "user", "content": _REMINDER})
                    continue
                ended = f"{IDLE_REPLIES} replies without a tool call: submitted what was in place"
                observation, reward, terminated, truncated, final = env.step({"tool": "submit"})
                steps += 1
                break
            idle = 0
            for call in tool_calls:
                observation, reward, terminated, truncated, final = env.step(call)
                steps += 1
                if terminated or truncated:
                    break  # the episode has landed: its answer is in gym_steps.jsonl
                say({"role": "tool", "tool_call_id": call.get("id"), "content": observation})
        if truncated and ended == "submitted":
            ended = "budget ran out (truncated)"
    finally:
        log.close()
    return EpisodeResult(
        competition_id=str(info.get("competition")), seed=seed, reward=float(reward), terminated=bool(terminated),
        truncated=bool(truncated), steps=steps, model_calls=calls, run_dir=info.get("run_dir"), ended=ended,
        valid=bool((final.get("grade") or {}).get("valid_submission")),
    )  # fmt: skip


def _request(settings: RolloutSettings, messages: list[dict[str, Any]], tools: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": settings.model, "messages": messages, "tools": tools, "tool_choice": "auto"}
    if settings.logprobs:
        body["logprobs"] = True
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


def _reply(answer: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """The assistant message of a chat completion (content and tool calls only), and its log-probabilities."""
    choices = answer.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _ModelRefused("the model's answer has no choices")
    choice = choices[0]
    given = choice.get("message")
    message: dict[str, Any] = given if isinstance(given, dict) else {}
    reply: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    if calls:
        reply["tool_calls"] = [
            {"id": str(c.get("id") or f"call_{i}"), "type": "function", "function": c.get("function") or {}}
            for i, c in enumerate(calls)
        ]
    return reply, choice.get("logprobs")


def env_id(ref: str) -> str:
    """The gym id of a competition named as ``podium run`` takes it (``ID`` or ``ID@VERSION``; version 1, the
    published definition, by default): ``podium/<id>-v<version>``."""
    from podium import registry

    competition = registry.get(ref)
    return f"podium/{competition.id}-v{competition.version}"


def pending(settings: RolloutSettings) -> list[tuple[str, int]]:
    """The (competition, seed) pairs of ``settings`` that its run group does not hold yet, in play order: a seed
    whose episode landed is held, whatever its reward; one landed as a harness error is not (played again)."""
    from podium import registry
    from podium.run.group import check_name
    from podium.store import RunStore

    settings = _in_group(settings)
    assert settings.run_group is not None
    check_name(settings.run_group)
    runs = Path(settings.runs_dir)
    held: set[tuple[str, int]] = set()
    if (runs / settings.run_group).is_dir():
        store = RunStore(runs)
        store.reconcile(settings.run_group)  # a run landed by a rollout killed before its index row counts too
        rows = store.rows(settings.run_group)
        held = {(r["competition_id"], int(r["seed"])) for r in rows if r["status"] != "harness_error"}
    seeds = range(settings.first_seed, settings.first_seed + settings.episodes)
    return [(ref, seed) for ref in settings.competitions for seed in seeds if (registry.get(ref).id, seed) not in held]


def _in_group(settings: RolloutSettings) -> RolloutSettings:
    """``settings`` with its run group named (the default one, ``gym-YYYYMMDD``, fixed for the whole batch)."""
    if settings.run_group is not None or not settings.competitions:
        return settings
    from podium.gym.options import check_options

    group = check_options(settings.competitions[0], **settings.env_kwargs()).run_group
    return replace(settings, run_group=group)


def rollout(
    settings: RolloutSettings,
    *,
    make: Callable[..., Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[EpisodeResult]:
    """Play ``settings.episodes`` episodes (seeds ``first_seed`` on) of each competition, one after another, but for
    those the run group holds already (:func:`pending`); returns how each played ended. ``make`` builds an
    environment (default: ``gymnasium.make`` of podium's id). Ctrl-C discards the episode in progress and raises
    ``KeyboardInterrupt``. On a Ray cluster: :func:`podium.gym.remote.rollout_on_cluster`."""
    import gymnasium

    from podium.run.group import batch_lock
    from podium.run.schedule import sweep_leftovers
    from podium.store import RunStore

    if settings.episodes < 1:
        raise UsageError(f"--episodes {settings.episodes}: play at least 1 episode per competition")
    make = make or gymnasium.make
    say = progress or (lambda line: None)
    settings = _in_group(settings)
    assert settings.run_group is not None
    total = len(settings.competitions) * settings.episodes
    results: list[EpisodeResult] = []
    with batch_lock(Path(settings.runs_dir) / settings.run_group):
        sweep_leftovers(RunStore(Path(settings.runs_dir)))  # what killed rollouts left (never a live one's)
        todo = pending(settings)
        if len(todo) < total:
            say(f"{total - len(todo)} of {total} episode(s) already in run group {printable(settings.run_group)!r}; "
                f"playing {len(todo)}")  # fmt: skip
        for position, (competition, seed) in enumerate(todo, 1):
            started = time.monotonic()
            where = f"[{position}/{len(todo)}] {printable(competition)} seed {seed}"
            env = make(env_id(competition), **settings.env_kwargs())
            try:
                result = play_episode(env, seed, settings)
            except KeyboardInterrupt:
                discard = getattr(getattr(env, "unwrapped", env), "discard", None)
                if discard is not None:  # interrupted outside a step (the model's call): discarded all the same
                    discard()
                raise
            except UsageError:
                raise
            except Exception as error:  # the episode landed as a harness error: the batch goes on
                if isinstance(error, PodiumError):
                    said = printable(str(error), 500)
                else:  # a bug of podium's: its traceback, each line made printable (it may quote the policy's text)
                    said = "\n".join(printable(line) for line in traceback.format_exc().splitlines())
                say(f"{where}: harness error (not the policy's; the same command plays it again): {said}")
                continue
            finally:
                env.close()
            results.append(result)
            say(f"{where}: reward {result.reward:g} ({result.steps} steps, {result.model_calls} model calls, "
                f"{time.monotonic() - started:.0f} s; {printable(result.ended)})")  # fmt: skip
    return results

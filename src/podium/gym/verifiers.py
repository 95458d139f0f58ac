"""podium's gym episodes as a Prime Intellect ``verifiers`` (0.4, ``verifiers.v1``) environment.

verifiers defines an environment as a *taskset* (tasks, each scored by its ``@reward`` methods) played by a
*harness* (the program that talks to the model). Here:

- :class:`PodiumTaskset` yields one task per competition and seed (``--env.taskset.competitions``,
  ``--env.taskset.episodes``); a task names the gym id (``podium/<id>-v<version>``) and the episode's seed.
- :class:`PodiumHarness` plays the task as a podium episode: ``gymnasium.make`` + ``reset`` and podium's own
  tool-calling loop (:func:`podium.gym.rollout.play_episode`), each tool call the model makes one ``env.step``,
  until ``submit`` or the step/time budget. Its model calls go through podium's LLM proxy (tokens, cost and the
  transcript kept in the run, as for every podium rollout), which forwards them to the address verifiers hands
  the harness (its interception server, which records the trace and reaches the policy's server). The loop runs
  in-process, as verifiers' harness contract allows ("the interception is the contract, not the process").
- The task's reward ``podium`` is the terminal reward podium landed in the episode's ``record.json``
  (``record["gym"]["reward"]``: the grade of the submission, outside the sandbox), read back from the run
  folder; nothing the policy wrote is trusted for it.

verifiers finds plugins by top-level module, so the ids are ``podium-verifiers`` (the shim package
``podium_verifiers``)::

    vf-eval podium-verifiers --env.agent.runtime.type subprocess --model M --client.base-url URL \\
        --env.taskset.competitions '["practice-titanic"]' --env.taskset.episodes 2

verifiers is imported only when one of these classes is first used; without it the error says
``pip install verifiers``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from podium.errors import UsageError

#: The classes built when verifiers is first needed (module attributes, through ``__getattr__``).
_LAZY = ("PodiumHarness", "PodiumTask", "PodiumTaskset")
__all__ = ["landed_reward", "verifiers_classes"]

#: The largest record.json read back for the reward.
_MAX_RECORD = 16 << 20
#: The largest request or answer the relay passes on.
_MAX_BODY = 64 << 20
_CLASSES: dict[str, type] = {}


def _verifiers() -> Any:
    try:
        import verifiers.v1 as vf
    except ImportError:
        raise UsageError("podium.gym.verifiers needs Prime Intellect's verifiers: pip install verifiers") from None
    return vf


def landed_reward(run_dir: str | None) -> float:
    """The terminal reward podium recorded for the episode in ``run_dir`` (its record.json's ``gym.reward``)."""
    from podium.untrusted import loads_object

    if not run_dir:
        raise UsageError("the episode landed no run folder, so it has no reward")
    record_path = Path(run_dir) / "record.json"
    with open(record_path, "rb") as file:
        data = file.read(_MAX_RECORD + 1)
    record = loads_object(data, max_bytes=_MAX_RECORD, what=str(record_path))
    gym = record.get("gym")
    reward = gym.get("reward") if isinstance(gym, dict) else None
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        raise UsageError(f"{record_path} holds no gym reward: is it a gym episode's record?")
    return float(reward)


def verifiers_classes() -> dict[str, type]:
    """verifiers' classes of this environment (``PodiumTaskset``, ``PodiumTask``, ``PodiumHarness``), built on
    first use; they are also this module's attributes of those names (what ``podium_verifiers`` exports)."""
    if _CLASSES:
        return _CLASSES
    vf = _verifiers()
    from pydantic import Field, field_validator

    # verifiers' bases, typed Any: verifiers is not among podium's type-checked dependencies.
    tasksetconfig: Any = vf.TasksetConfig
    taskdata: Any = vf.TaskData
    task: Any = vf.Task
    taskset: Any = vf.Taskset
    harnessconfig: Any = vf.HarnessConfig
    harness: Any = vf.Harness

    class PodiumTasksetConfig(tasksetconfig):
        competitions: list[str] = Field(default_factory=lambda: ["practice-titanic"])
        """Competitions as ``podium run`` names them (``ID`` or ``ID@VERSION``)."""
        episodes: int = Field(1, ge=1)
        """Episodes (seeds ``first_seed``, ``first_seed + 1``, ...) per competition."""
        first_seed: int = 0
        variant: str | None = None
        """The gym task variant (``holdout`` or ``sealed``); None: the environment's default."""
        allow_sealed: bool = False
        rows: int | None = None
        runs_dir: str = "runs"
        run_group: str | None = None
        sandbox: str = "bwrap"
        time_limit: str | None = None
        max_steps: int | None = None
        max_cost: float | None = None
        logprobs: bool = False

        @field_validator("competitions")
        @classmethod
        def _known(cls, competitions: list[str]) -> list[str]:
            from podium.errors import PodiumError
            from podium.gym.rollout import env_id

            if not competitions:
                raise ValueError("name at least one competition (--env.taskset.competitions '[\"ID\"]')")
            for competition in competitions:
                try:
                    env_id(competition)
                except PodiumError as error:
                    raise ValueError(str(error)) from None
            return competitions

    class PodiumData(taskdata):
        competition: str
        env_id: str
        seed: int
        settings: dict[str, Any]

    class PodiumTask(task[PodiumData]):
        @vf.reward(weight=1.0)
        async def podium(self, trace: Any) -> float:
            episode = trace.info.get("podium")
            run_dir = episode.get("run_dir") if isinstance(episode, dict) else None
            return await asyncio.to_thread(landed_reward, run_dir)

    class PodiumTaskset(taskset[PodiumTask, PodiumTasksetConfig]):
        def load(self) -> Any:
            from podium.gym.rollout import env_id

            config = self.config
            settings = {
                "task": config.variant, "allow_sealed": config.allow_sealed, "rows": config.rows,
                "runs_dir": config.runs_dir, "run_group": config.run_group, "sandbox": config.sandbox,
                "time_limit": config.time_limit, "max_steps": config.max_steps, "max_cost": config.max_cost,
                "logprobs": config.logprobs,
            }  # fmt: skip
            for competition in config.competitions:
                gym_id = env_id(competition)
                for seed in range(config.first_seed, config.first_seed + config.episodes):
                    yield PodiumTask(
                        PodiumData(
                            name=f"{competition}#{seed}",
                            competition=competition,
                            env_id=gym_id,
                            seed=seed,
                            prompt=f"podium competition {competition}, episode seed {seed} (the task arrives at reset)",
                            settings=settings,
                        ),
                        config.task,
                    )

    class PodiumHarnessConfig(harnessconfig):
        call_timeout: float = 600.0
        """Seconds one model call may take."""

    class PodiumHarness(harness[PodiumHarnessConfig]):
        NEEDS_CONTAINER = False  # the episode's own sandbox (bwrap or Docker) holds the model's commands
        EXECUTES_CODE = True

        async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
            summary = await asyncio.to_thread(_play, ctx.model, endpoint, secret, data, self.config.call_timeout)
            trace.info["podium"] = summary
            return vf.ProgramResult(exit_code=0, stdout=json.dumps(summary), stderr="")

    _CLASSES.update(PodiumTaskset=PodiumTaskset, PodiumHarness=PodiumHarness, PodiumTask=PodiumTask)
    return _CLASSES


def _play(model: str, endpoint: str, secret: str, data: Any, call_timeout: float) -> dict[str, Any]:
    """One podium episode of the task ``data``, its model calls sent through podium's proxy to ``endpoint``."""
    import gymnasium

    import podium.gym  # noqa: F401  (registers the ids)
    from podium.gym.rollout import RolloutSettings, play_episode

    # podium's proxy reads the upstream key from an environment variable: one of its own per episode.
    key_env = f"PODIUM_VERIFIERS_KEY_{secrets.token_hex(8).upper()}"
    os.environ[key_env] = secret
    try:
        known = {k: v for k, v in data.settings.items() if v is not None}
        settings = RolloutSettings(model=model, competitions=[data.competition], base_url=endpoint,
                                   api_key_env=key_env, **known)  # fmt: skip
        relay = _BearerRelay(endpoint, secret)
        scratch = tempfile.mkdtemp(prefix="podium-verifiers-")
        env = _ModelAddress(gymnasium.make(data.env_id, **settings.env_kwargs()), relay.base_url, scratch)
        try:
            result = play_episode(env, data.seed, settings, call_timeout=call_timeout)
        finally:
            env.close()
            relay.close()
            shutil.rmtree(scratch, ignore_errors=True)
    finally:
        os.environ.pop(key_env, None)
    return {"run_dir": result.run_dir, "reward": result.reward, "terminated": result.terminated,
            "truncated": result.truncated, "steps": result.steps, "model_calls": result.model_calls,
            "ended": result.ended, "valid_submission": result.valid}  # fmt: skip


class _ModelAddress:
    """The environment as play_episode sees it, with a model address at reset when the environment started no
    proxy of its own for the policy (``info["llm_base_url"]`` None): then the relay's."""

    def __init__(self, env: Any, fallback: str, scratch: str) -> None:
        self.env, self.fallback, self.scratch = env, fallback, scratch

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        if not info.get("llm_base_url"):
            info = {**info, "llm_base_url": self.fallback}
        run_dir = info.get("run_dir")
        if not info.get("staging_dir") and not (run_dir and os.path.isdir(run_dir)):
            # No folder of the episode exists yet for the loop's message log: the conversation is kept in
            # verifiers' trace instead.
            info = {**info, "staging_dir": self.scratch}
        return observation, info

    def step(self, action: Any) -> Any:
        return self.env.step(action)

    def close(self) -> None:
        self.env.close()


class _BearerRelay:
    """A loopback HTTP relay that forwards chat-completion POSTs to verifiers' interception with the rollout's
    bearer secret (podium's loop sends none: its own proxy holds keys). Bodies are bounded both ways."""

    def __init__(self, endpoint: str, secret: str) -> None:
        import http.client
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        target = urlsplit(endpoint)
        if target.scheme != "http" or not target.hostname:
            raise UsageError(f"verifiers gave the harness a model address podium cannot call: {endpoint!r}")
        prefix, host, port = target.path.rstrip("/"), target.hostname, target.port or 80

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = self.headers.get("Content-Length") or "0"
                if not length.isdigit() or int(length) > _MAX_BODY:
                    self.send_error(413, "request too large or of no stated length")
                    return
                body = self.rfile.read(int(length))
                path = prefix + self.path.removeprefix("/v1")
                upstream = http.client.HTTPConnection(host, port, timeout=900)
                try:
                    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {secret}"}
                    upstream.request("POST", path, body, headers)
                    answer = upstream.getresponse()
                    data = answer.read(_MAX_BODY + 1)
                except (OSError, http.client.HTTPException) as error:
                    self.send_error(502, f"verifiers' model address did not answer: {type(error).__name__}")
                    return
                finally:
                    upstream.close()
                if len(data) > _MAX_BODY:
                    self.send_error(502, "the model's answer is too large")
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type") or "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return verifiers_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

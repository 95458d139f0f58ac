"""A podium competition as a Gymnasium environment: each episode a podium run driven one tool call at a time.

``reset`` starts the episode's sandbox (:class:`~podium.gym.episode.Episode`) and returns the task; ``step`` runs
one tool call in it (``bash`` in the persistent shell, ``write_file``, ``submit``); the episode ends at
``submit`` (terminated) or when ``max_steps`` or the wall ``time_limit`` runs out (truncated), and what is in
place then is graded and landed as a run. A ``reset`` or ``close`` during an episode ends it as truncated the
same way, so every episode started is a run in the store; only Ctrl-C (a ``KeyboardInterrupt`` in ``reset`` or
``step``, or :meth:`PodiumEnv.discard` after one elsewhere) discards it, landing nothing.
"""

from __future__ import annotations

import contextlib
import copy
import math
import time
from typing import Any

import gymnasium

from podium.errors import PodiumError, UsageError
from podium.gym.actions import ToolCall, parse_action, tool_schemas
from podium.gym.episode import Episode
from podium.gym.observations import AnyText, listing, reset_text, step_text, submitted
from podium.gym.options import EnvOptions, check_options
from podium.gym.rewards import reward_of
from podium.gym.shell import ShellGone
from podium.gym.spaces import ToolCallSpace
from podium.gym.tasks import Task, task_of
from podium.run.config import RunConfig
from podium.run.group import check_name, join, settings_of
from podium.store import RunStore
from podium.untrusted import printable

__all__ = ["DEFAULT_TIMEOUT_S", "PodiumEnv", "run_config"]

#: A bash step's timeout when the action gives none (always capped by the episode's time left).
DEFAULT_TIMEOUT_S = 600.0
_SEED_RANGE = 1 << 31
#: The most JSON one byte of output takes in the shell server's answer (a control byte as ``\u0001``, an
#: undecodable one as ``\ufffd``): its head and tail of ``max_bytes`` each fit, whatever the command printed.
_JSON_BYTES_PER_BYTE = 6


class PodiumEnv(gymnasium.Env[str, dict[str, Any]]):
    """One competition (``id@version``) as an environment; see :mod:`podium.gym` for the keyword arguments."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (Gymnasium's own attribute)
    #: Whether an episode is graded where it ran (a cluster node's episodes are graded on the driver).
    grade_here = True

    def __init__(self, competition: str, **kwargs: Any) -> None:
        self.options: EnvOptions = check_options(competition, **kwargs)
        check_name(self.options.run_group)
        from podium.gym.registration import env_id

        self.env_id = env_id(self.options.competition)
        if self.options.sandbox != "local":  # no bwrap (or no engine) is one line now, not at the first reset
            from podium.sandbox import get_sandbox

            get_sandbox(self.options.sandbox)
        self.task: Task = task_of(self.options)
        self._llm = None
        if self.options.llm is not None:  # checked now (its key too), not at the first reset
            from podium.gym.policy_llm import policy_key, policy_llm_config

            self._llm = policy_llm_config(self.options.llm)
            policy_key(self._llm)
        self.observation_space = AnyText()
        self.action_space = ToolCallSpace()
        self.store = RunStore(self.options.runs_dir)
        self._episode: Episode | None = None
        self._steps = 0
        self._ended = True
        self._t_end = 0.0

    # -- the episode ------------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        try:
            return self._reset(seed, options)
        except KeyboardInterrupt:  # Ctrl-C: the episode started is not a result
            self.discard()
            raise

    def _reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._end_unfinished()
        options = dict(options or {})
        episode_seed = int(seed) if seed is not None else self._draw_seed()
        split_seed = options.get("split_seed", episode_seed)
        if isinstance(split_seed, bool) or not isinstance(split_seed, int) or split_seed < 0:
            raise UsageError(f"options['split_seed']={split_seed!r} must be a whole number >= 0.")
        data_dir = self.task.data_for(split_seed)
        config = self._config(data_dir)
        join(self.options.runs_dir / self.options.run_group, settings_of(config), self.options.competition.id)
        episode = Episode(config, self.options.competition, episode_seed, self.store, self._llm, self.grade_here)
        episode.adjust_grade = self.task.adjust_grade
        episode.start()
        self._episode, self._steps, self._ended = episode, 0, False
        self._split_seed = split_seed
        assert episode.setup is not None
        observation = reset_text(
            episode.staging.instructions.read_text(encoding="utf-8"),
            self.task.description(data_dir),
            listing(episode.setup.paths.public),
            self.task.note(split_seed),
        )
        tools = tool_schemas()  # what the policy is offered, kept with the reset (the export's tools_json)
        reset = _entry(0, "reset", {"seed": episode_seed, "options": options}, None, observation)
        episode.log_step({**reset, "tools": tools})
        info = {
            "tools": tools,
            "run_dir": str(episode.final.root),
            "staging_dir": str(episode.staging.root),
            "competition": self.options.competition.ref,
            "task": self.options.task,
            "seed": episode_seed,
            "split_seed": split_seed,
            "env_id": self.env_id,
            "llm_base_url": episode.policy.base_url if episode.policy is not None else None,
        }
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is None or self._ended:
            raise UsageError(
                f"step() on {self.env_id} after its episode ended (or before any reset). Fix: call reset() first."
            )
        try:
            return self._step(episode, action)
        except KeyboardInterrupt:  # Ctrl-C: the episode is not a result
            self.discard()
            raise

    def discard(self) -> None:
        """Discard the episode in progress (after Ctrl-C): its command killed, its sandbox ended, nothing landed and
        no staging folder left; the next ``reset`` starts another. Nothing happens when no episode is going."""
        if self._episode is not None and not self._ended:
            self._ended = True
            self._episode.discard()

    def _step(self, episode: Episode, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        started = time.monotonic()
        call = parse_action(action)
        answer: dict[str, Any] = {}
        terminated = truncated = False
        error = None
        if isinstance(call, str):
            observation, error = f"error: {call}", call
        elif call.tool == "submit":
            observation, terminated = "submitted", True  # what the grade found is said once it is known
        else:
            try:
                observation, answer = self._tool(episode, call)
            except _Refused as refused:
                observation, error = f"error: {refused}", str(refused)
            except ShellGone as gone:  # the sandbox ended: its time limit, or the policy killed its shell
                observation, error, truncated = f"the episode's sandbox ended: {gone}", str(gone), True
        self._steps += 1
        if not terminated and (self._steps >= self.options.max_steps or episode.time_left() <= 0):
            truncated = True
        tool = call.tool if isinstance(call, ToolCall) else "invalid"
        arguments = call.arguments if isinstance(call, ToolCall) else {"action": _described(action)}
        entry = _entry(self._steps, tool, arguments, getattr(call, "call_id", None), observation)
        entry.update(
            exit_code=answer.get("exit_code"),
            elapsed_s=answer.get("elapsed_s", 0.0),
            cpu_s=answer.get("cpu_s"),
            max_rss_bytes=answer.get("max_rss_bytes"),
            terminated=terminated,
            truncated=truncated,
            error=error,
        )
        info: dict[str, Any] = {"step": self._steps, "error": error, "exit_code": entry["exit_code"]}
        reward = 0.0
        if terminated or truncated:
            entry["step_s"] = round(time.monotonic() - started, 6)
            reward, final = self._finish(terminated, truncated, entry)
            observation = entry["observation"]
            info.update(final)
        else:
            entry["step_s"] = round(time.monotonic() - started, 6)
            episode.log_step(entry)
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        self._end_unfinished()
        super().close()

    # -- helpers ----------------------------------------------------------------------------------------------

    def _tool(self, episode: Episode, call: ToolCall) -> tuple[str, dict[str, Any]]:
        left = episode.time_left()
        if left <= 0:
            raise ShellGone("its time limit is reached")
        limit = self.options.max_observation_chars
        if call.tool == "bash":
            timeout = min(float(call.arguments.get("timeout", DEFAULT_TIMEOUT_S)), left)
            request = {"op": "bash", "command": call.arguments["command"], "timeout": timeout, "max_bytes": 2 * limit}
            answer = episode.request(request, timeout + 30.0, 2 * 2 * limit * _JSON_BYTES_PER_BYTE)
            if "head" not in answer and isinstance(answer.get("error"), str):  # a command no system call takes
                raise _Refused(f"bash: {printable(answer['error'], 1000)}")
            answer = _checked_bash(answer)
            return step_text(answer, limit), answer
        request = {"op": "write", "path": call.arguments["path"], "content": call.arguments["content"]}
        answer = episode.request(request, min(60.0, left + 5.0), 1 << 16)
        if answer.get("ok") is True:
            return f"wrote {_int(answer.get('bytes'))} bytes to {printable(str(answer.get('path')), 500)}", {}
        path, why = call.arguments["path"][:500], printable(str(answer.get("error")), 1000)
        return f"error: could not write {path!r}: {why}", {}

    def _finish(self, terminated: bool, truncated: bool, last: dict[str, Any] | None) -> tuple[float, dict[str, Any]]:
        """Grade and land the episode; (the reward, the final info)."""
        episode = self._episode
        assert episode is not None
        self._ended = True
        gym = self._gym_facts(episode, terminated, truncated)
        invalid = self.options.invalid_reward
        told = (lambda grade, reward: submitted(grade, invalid if reward is None else reward)) if terminated else None
        record = episode.finish(gym, self._reward, last, told)
        assert episode.landed is not None
        reward = float(gym["reward"]) if gym["reward"] is not None else self.options.invalid_reward
        grade = record.grade.to_dict() if record.grade is not None else None
        return reward, {"grade": grade, "record": str(episode.landed / "record.json"), "reward": reward}

    def _reward(self, grade: Any) -> float:
        reward = reward_of(self.options.reward, grade, self.options.invalid_reward)
        return reward if math.isfinite(reward) else self.options.invalid_reward

    def _gym_facts(self, episode: Episode, terminated: bool, truncated: bool) -> dict[str, Any]:
        calls = len(episode.server.calls) if episode.server is not None else 0
        holdout = len(episode.server.holdout_calls) if episode.server is not None else 0
        exposed = [f"validation_calls:{calls}"] if calls else []
        exposed += [f"holdout_scorer_calls:{holdout}"] if holdout else []
        return {
            "env_id": self.env_id,
            "task": self.options.task,
            "model": self.options.model,
            "reward_kind": self.options.reward_kind,
            "reward": None,
            "invalid_reward": self.options.invalid_reward,
            "terminated": terminated,
            "truncated": truncated,
            "steps": self._steps,
            "max_steps": self.options.max_steps,
            "rows": self.options.rows,
            "split_seed": self._split_seed if self.options.task == "holdout" else None,
            "sealed_test_touched": self.options.task == "sealed" and not self.task.free,
            "exposed": exposed,
        }

    def _end_unfinished(self) -> None:
        """An episode still going when the policy resets or closes: ended as truncated, graded, landed."""
        if self._episode is not None and not self._ended:
            with contextlib.suppress(PodiumError):  # landed as a harness error by the episode itself
                self._finish(False, True, None)

    def _draw_seed(self) -> int:
        """A seed for an episode reset without one: from the environment's generator, one the group does not hold."""
        for _ in range(100):
            seed = int(self.np_random.integers(_SEED_RANGE))
            if not self.store.run_dir(self.options.run_group, self.options.competition.id, seed).exists():
                return seed
        raise UsageError(f"no free seed found in run group {self.options.run_group!r}")

    def _config(self, data_dir: Any) -> RunConfig:
        return run_config(self.options, data_dir)


def run_config(options: EnvOptions, data_dir: Any, seeds: int = 1) -> RunConfig:
    """The run configuration of an episode of ``options`` on ``data_dir`` (``seeds``: a batch of them)."""
    from podium.agents import folder_digest, load_agent_folder
    from podium.gym.registration import AGENT_FOLDER

    return RunConfig(
        agent=load_agent_folder(str(AGENT_FOLDER)),
        seeds=seeds,
        time_limit=options.time_limit,
        sandbox=options.sandbox,
        cpus=options.cpus,
        memory_bytes=options.memory_bytes,
        gpus=options.gpus,
        run_group=options.run_group,
        data_dir=data_dir,
        runs_dir=options.runs_dir,
        agent_hash=folder_digest(AGENT_FOLDER),
    )


def _checked_bash(answer: dict[str, Any]) -> dict[str, Any]:
    """The shell server's answer to a bash request, its fields checked (it is written beside the policy)."""
    if not isinstance(answer.get("head"), str) or not isinstance(answer.get("tail"), str):
        raise ShellGone("the shell server's answer has no output")
    code = answer.get("exit_code")
    return {
        "head": answer["head"],
        "tail": answer["tail"],
        "cut_bytes": _int(answer.get("cut_bytes")),
        "timed_out": answer.get("timed_out") is True,
        "exit_code": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "elapsed_s": _float(answer.get("elapsed_s")) or 0.0,
        "cpu_s": _float(answer.get("cpu_s")),
        "max_rss_bytes": _int(answer.get("max_rss_bytes")) if answer.get("max_rss_bytes") is not None else None,
    }


class _Refused(Exception):
    """The shell server could not carry out a call (a command over what a command line holds): an observation."""


def _described(action: Any) -> str:
    """A refused action as the steps keep it: its repr, cut (an int of over 4,300 digits, or an object whose repr
    raises, has none: its type is said instead)."""
    try:
        return repr(action)[:1000]
    except Exception:
        return f"<a {type(action).__name__} podium cannot show>"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _entry(step: int, tool: str, arguments: dict[str, Any], call_id: str | None, observation: str) -> dict[str, Any]:
    return {
        "step": step,
        "tool": tool,
        "arguments": copy.deepcopy(arguments),
        "call_id": call_id,
        "observation": observation,
        "exit_code": None,
        "elapsed_s": 0.0,
        "step_s": 0.0,
        "cpu_s": None,
        "max_rss_bytes": None,
        "reward": 0.0,
        "terminated": False,
        "truncated": False,
        "error": None,
    }

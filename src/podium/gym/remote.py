"""Gym episodes as Ray tasks: ``podium rollout --cluster ray`` (:func:`rollout_on_cluster`).

The batch is :func:`podium.cluster.run_cluster_batch`'s, the one ``podium run --cluster`` runs: the run group held
and its ``group.json`` checked and written, each (competition, seed) one Ray task asking for the episode's CPUs,
memory and GPUs (and ``--ray-resource``), at most a window of them in Ray, a node lost mid-episode retried once
elsewhere (``cluster.attempts``) and a second loss landed as ``harness_error``, Ctrl-C cancelling every task, and
what a landed group already holds not played again. Only the task's body differs: :func:`play_on_node` plays one
episode there with :func:`podium.gym.rollout.play_episode` (the model reached from the node, through the episode's
own LLM proxy) in a :class:`NodeEnv`, which lands the episode in a scratch runs folder of the node *ungraded*:
the node has the public data only. The episode's folder comes back as the tar every cluster run sends, unpacked
here through :mod:`podium.untrusted`'s checks; the driver grades it with the answers only it holds, and
:class:`GymLanding` writes the record's ``gym`` section: what the episode was from the driver's own options,
what the node observed (how it ended, its steps, what it exposed) checked, and the reward from the driver's grade.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from podium import owner
from podium.cluster.address import ClusterSpec, parse_cluster
from podium.cluster.driver import NodeWork, run_cluster_batch
from podium.cluster.node import (
    Shipment,
    declared_here,
    keys_set,
    node_answer,
    node_data,
    node_name,
    sweep_node,
)
from podium.cluster.transfer import Parcel
from podium.errors import UsageError
from podium.gym.env import PodiumEnv, run_config
from podium.gym.episode import STEPS_FILE
from podium.gym.options import EnvOptions, check_options, is_free
from podium.gym.rewards import reward_of
from podium.gym.rollout import EpisodeResult, RolloutSettings, play_episode
from podium.paths import RunPaths, write_atomic
from podium.records import RunRecord
from podium.run.execute import failed_record
from podium.run.interrupt import Stop
from podium.run.schedule import Batch
from podium.untrusted import loads_object, read_bounded

__all__ = ["GymLanding", "NodeEnv", "cluster_options", "play_batch", "play_on_node", "result_of", "rollout_on_cluster"]

#: The largest steps file whose last line the driver rewrites with the reward (bigger: left as the node wrote it).
_STEPS_MAX_BYTES = 64 << 20
_EXPOSED = re.compile(r"(validation_calls|holdout_scorer_calls):[0-9]{1,9}")


class NodeEnv(PodiumEnv):
    """A podium environment on a cluster node: episodes land ungraded (the driver grades them)."""

    grade_here = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = super().reset(seed=seed, options=options)
        self.staging_dir = str(info["staging_dir"])
        return observation, info


def rollout_on_cluster(settings: RolloutSettings, cluster: ClusterSpec | str) -> list[EpisodeResult]:
    """Play ``settings.episodes`` episodes (seeds 0 to K-1) of each competition as Ray tasks on ``cluster`` (a
    :class:`~podium.cluster.ClusterSpec`, or an address as ``--cluster`` takes it: ``ray``, ``ray:HOST:PORT``,
    ``ray://HOST:PORT``); every episode lands in ``settings.runs_dir`` as a run graded here. Episodes the group
    already holds are not played again; an interrupted batch raises ``KeyboardInterrupt`` (landed ones stay).
    Returns how each episode that landed now ended."""
    spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec(parse_cluster(str(cluster)))
    batch = play_batch(settings, spec)
    if batch.interrupted:
        raise KeyboardInterrupt
    return [result_of(record) for record in batch.records]


def cluster_options(settings: RolloutSettings) -> dict[str, EnvOptions]:
    """Each competition's checked options for a cluster rollout, refused in one line before any cluster is asked
    for: what a cluster cannot play yet (a holdout task) too."""
    if settings.episodes < 1:
        raise UsageError(f"--episodes {settings.episodes}: play at least 1 episode per competition")
    if settings.first_seed != 0:
        raise UsageError("a cluster rollout plays seeds 0 to K-1 (as podium run does); first_seed must be 0")
    kwargs = settings.env_kwargs()
    options = {ref: check_options(ref, **kwargs) for ref in settings.competitions}
    if any(o.task == "holdout" for o in options.values()):
        raise UsageError("--cluster plays sealed episodes for now (a holdout task's split is made per episode "
                         "seed on the driver). Fix: pass --task sealed on practice or dev competitions")  # fmt: skip
    return options


def play_batch(settings: RolloutSettings, cluster: ClusterSpec) -> Batch:
    """:func:`rollout_on_cluster`'s batch, as :func:`podium.cluster.run_cluster_batch` returns it."""
    options = cluster_options(settings)
    first = next(iter(options.values()))
    config = run_config(first, first.data_dir, seeds=settings.episodes)
    keys: dict[str, str] = {}
    if first.llm is not None:
        from podium.gym.policy_llm import policy_key, policy_llm_config

        llm = policy_llm_config(first.llm)
        key = policy_key(llm)
        if key:  # a loopback server's empty key stays unset on the node too
            keys[llm.provider.api_key_env] = key
    landing = GymLanding({o.competition.id: o for o in options.values()})
    work = NodeWork(play_on_node, (asdict(settings),), keys, landing)
    return run_cluster_batch(config, [o.competition for o in options.values()], cluster, work=work)


def result_of(record: RunRecord) -> EpisodeResult:
    """How a landed episode ended, from its record (written by the driver: :class:`podium.gym.remote.GymLanding`)."""
    gym = record.gym or {}
    grade = record.grade
    llm = record.llm if isinstance(record.llm, dict) else {}
    ended = "submitted" if gym.get("terminated") else "budget ran out (truncated)"
    return EpisodeResult(
        competition_id=record.competition_id, seed=record.seed, reward=float(gym.get("reward") or 0.0),
        terminated=bool(gym.get("terminated")), truncated=bool(gym.get("truncated")), steps=int(gym.get("steps") or 0),
        model_calls=int(llm.get("calls") or 0), run_dir=None, ended=ended,
        valid=bool(grade is not None and grade.valid_submission),
    )  # fmt: skip


class GymLanding:
    """Before an episode from a node lands: its record's ``gym`` written here (the reward from the driver's grade)."""

    def __init__(self, options: dict[str, EnvOptions]) -> None:
        self.options = options

    def __call__(self, record: RunRecord, staging: RunPaths) -> None:
        options = self.options[record.competition_id]
        node = record.gym if isinstance(record.gym, dict) else {}
        steps = node.get("steps")
        exposed = node.get("exposed")
        graded = record.grade is not None
        reward = reward_of(options.reward, record.grade, options.invalid_reward) if graded else None
        if reward is not None and not float("-inf") < reward < float("inf"):
            reward = options.invalid_reward
        record.gym = {
            "env_id": f"podium/{options.competition.id}-v{options.competition.version}",
            "task": options.task,
            "model": options.model,
            "reward_kind": options.reward_kind,
            "reward": reward,
            "invalid_reward": options.invalid_reward,
            "terminated": node.get("terminated") is True,
            "truncated": node.get("truncated") is True and node.get("terminated") is not True,
            "steps": steps if type(steps) is int and 0 <= steps <= options.max_steps else 0,
            "max_steps": options.max_steps,
            "rows": options.rows,
            "split_seed": record.seed if options.task == "holdout" else None,
            "sealed_test_touched": options.task == "sealed" and not is_free(options.competition),
            "exposed": [e for e in exposed[:2] if isinstance(e, str) and _EXPOSED.fullmatch(e)]
            if isinstance(exposed, list)
            else [],
        }
        if reward is not None:
            _set_last_reward(staging.root / STEPS_FILE, reward)


def _set_last_reward(path: Path, reward: float) -> None:
    """The reward on the last line of the episode's steps (the node's file, read as hostile: no link followed,
    bounded); a file that is not podium's shape is left as it is."""
    data = read_bounded(path, _STEPS_MAX_BYTES + 1, single_link=True)
    if data is None or len(data) > _STEPS_MAX_BYTES:
        return
    lines = data.rstrip(b"\n").split(b"\n")
    try:
        last = loads_object(lines[-1], max_bytes=_STEPS_MAX_BYTES, what="the episode's last step")
    except ValueError:
        return
    if last.get("terminated") is not True and last.get("truncated") is not True:
        return
    lines[-1] = json.dumps({**last, "reward": reward}, ensure_ascii=False).encode()
    write_atomic(path, (b"\n".join(lines) + b"\n").decode("utf-8", "replace"))


def play_on_node(
    config: Any,
    ref: str,
    record_data: dict[str, Any],
    shipment: Shipment,
    data: Parcel | None,
    agent: Parcel,
    ledger: Any,
    keys: dict[str, str] | None,
    settings: dict[str, Any],
) -> dict[str, Any]:
    """The Ray task: one episode of ``ref`` with ``record_data``'s seed, played here with the model, landed
    ungraded in a scratch runs folder, its folder packed into this node's outbox (as
    :func:`~podium.cluster.node.run_on_node` answers; ``agent`` is not used: the episode's agent is podium's)."""
    import ray

    here = node_name()
    key = f"{record_data['run_group']}/{record_data['competition_id']}/{record_data['seed']}"
    attempts = [here]
    with contextlib.suppress(Exception):  # the ledger only informs the record
        attempts = ray.get(ledger.start.remote(key, here), timeout=30)
    sweep_node()
    record = RunRecord.from_dict(record_data)
    gpu_ids = [int(i) for i in ray.get_gpu_ids()]
    root = owner.mkdtemp("gym-node")
    runs = root / "runs"
    landed = runs / record.run_group / record.competition_id / str(record.seed)
    origin: str | None = None
    failure: Exception | None = None
    try:
        with keys_set(keys or {}), contextlib.ExitStack() as declared:
            try:
                declared.enter_context(declared_here(ray, shipment))
                rollout = RolloutSettings(**settings)
                here_data = str(node_data(ray, shipment, data))  # the public side only
                kwargs = {**rollout.env_kwargs(), "runs_dir": str(runs), "run_group": record.run_group}
                env = NodeEnv(ref, **{**kwargs, "data_dir": here_data})
                try:
                    play_episode(env, record.seed, rollout)
                except KeyboardInterrupt:  # ray.cancel (the driver's Ctrl-C): the sandbox killed by its kill path
                    Stop(config, lambda: 1).kill_running()
                    raise  # past the handler below: nothing of the episode is sent back
                finally:
                    env.close()
                    origin = getattr(env, "staging_dir", None)
            except Exception as exc:  # the episode could not be played: landed (or made here) as a harness error
                failure = exc
        if (landed / "record.json").is_file():  # written here, by this process: the node's own record
            record = RunRecord.from_dict(json.loads((landed / "record.json").read_text(encoding="utf-8")))
            os.unlink(landed / "record.json")
        else:
            landed.mkdir(parents=True, exist_ok=True)
            failed_record(record, failure or RuntimeError("the episode left no record"), RunPaths(landed))
        record.node = here
        record.limits["gpu_ids"] = gpu_ids
        error = record.error if record.status == "harness_error" else None
        return node_answer(ray, record, RunPaths(landed), config.disk_bytes, attempts, error, origin)
    finally:
        shutil.rmtree(root, ignore_errors=True)

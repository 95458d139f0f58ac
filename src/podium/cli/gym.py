"""``podium rollout`` and ``podium trajectories export``: their flags (added by :func:`add_gym_parsers`) and what
each prints. The work is :mod:`podium.gym`'s (docs/gym.md).

Exit status: 0 done (with ``--cluster``: also when the run group already held every episode asked for); 1
``rollout`` landed no episode with a valid submission; 2 a usage error; 130 interrupted (the episodes in progress
are discarded, those landed stay).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from podium.cli import values
from podium.cli.outputs import output_dir, output_file
from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["add_gym_parsers", "cmd_rollout", "cmd_trajectories_export"]


def add_gym_parsers(sub: Any) -> None:
    """Add ``rollout`` and ``trajectories`` to the subcommands ``sub``."""
    p = sub.add_parser(
        "rollout",
        help="play gym episodes with a model and land them as runs (docs/gym.md)",
        description="Play K episodes of each competition's gym environment with a model: a plain tool-calling loop "
        "(chat completions with the tools bash, write_file and submit) through podium's LLM proxy, so tokens, cost "
        "and the transcript are kept. Each episode lands as a run under --runs-dir/--run-group.",
    )
    p.add_argument("--model", required=True, help="the policy's model name, as its server knows it")
    p.add_argument("--provider", default="openai", choices=["openai", "openrouter"],
                   help="the server's kind: any OpenAI-compatible chat-completions server is openai with --base-url")  # fmt: skip
    p.add_argument("--base-url", default=None, help="the server's address, e.g. a local vLLM: http://127.0.0.1:8000")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="the environment variable holding the server's key (default: the provider's own)")  # fmt: skip
    p.add_argument("--competitions", required=True, metavar="ID,...", type=_ids,
                   help="the competitions to play (ID or ID@VERSION, comma-separated)")  # fmt: skip
    p.add_argument("--episodes", type=values.count(1, "--episodes"), default=1, metavar="K",
                   help="episodes per competition, seeds 0 to K-1 (default 1)")  # fmt: skip
    p.add_argument("--task", default=None, choices=["holdout", "sealed"],
                   help="holdout: podium's re-split of the public training data (default on the benchmark's "
                   "competitions); sealed: the benchmark task graded on the private answers")  # fmt: skip
    p.add_argument("--allow-sealed", action="store_true",
                   help="allow --task sealed on one of the benchmark's 75 competitions (recorded, shown by reports)")  # fmt: skip
    p.add_argument("--rows", type=values.count(1, "--rows"), default=None, metavar="N",
                   help="shrink a holdout task's visible training data to N rows")  # fmt: skip
    p.add_argument(
        "--time-limit", type=values.time_limit, default=None, help="wall-clock limit per episode (default 1h)"
    )
    p.add_argument(
        "--max-steps", type=values.count(1, "--max-steps"), default=None, help="steps per episode (default 100)"
    )
    p.add_argument("--max-cost", type=values.money, default=None, metavar="USD", help="the cost budget of each episode")
    p.add_argument("--max-answer-tokens", type=values.count(1, "--max-answer-tokens"), default=None, metavar="N",
                   help="cap each answer of the model at N tokens")  # fmt: skip
    p.add_argument("--temperature", type=values.number, default=None, help="the sampling temperature sent")
    p.add_argument("--logprobs", action="store_true", help="ask for token log-probabilities and keep them")
    p.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker"], help="the episodes' sandbox")
    p.add_argument("--cpus", type=values.cpus, default=None, help="CPU cores per episode (on a cluster: asked of Ray)")
    p.add_argument("--memory", type=values.size("memory cap"), default=None, help="memory cap per episode, e.g. 4G")
    p.add_argument("--gpus", type=values.count(0, "number of GPUs"), default=None, help="GPUs per episode")
    p.add_argument("--cluster", default=None, metavar="ray|ray:HOST:PORT|ray://HOST:PORT",
                   help="play each episode as a task on a running Ray cluster, as podium run --cluster runs runs; "
                   "landed and graded here; episodes the group holds are not played again (docs/gym.md)")  # fmt: skip
    p.add_argument("--ray-resource", action="append", default=None, metavar="NAME[=N]",
                   help="with --cluster: a custom resource each episode asks for; repeatable")  # fmt: skip
    p.add_argument("--node-data-dir", default=None, metavar="DIR",
                   help="with --cluster: the prepared data as the nodes see it (default: shipped through Ray)")  # fmt: skip
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    p.add_argument("--runs-dir", default="runs", help="where the episodes land")
    p.add_argument("--run-group", default=None, help="the run group (default gym-YYYYMMDD)")
    p.set_defaults(fn=cmd_rollout)

    p = sub.add_parser("trajectories", help="episodes as training data (docs/gym.md)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = actions.add_parser(
        "export",
        help="one row per episode: chat messages with tool calls, reward, timings, grade, audit verdict",
        description="Write one row per gym episode found under RUNS (runs folders, run groups or runs): the "
        "conversation in OpenAI's chat format, the reward, terminated/truncated, per-step timings and resource use, "
        "the grade, the audit verdict where audited, and what the policy could see of the hidden answers.",
    )
    q.add_argument("runs", nargs="+", metavar="RUNS", help="a runs folder, a run group folder or a run folder")
    q.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    q.add_argument("--format", default=None, choices=["jsonl", "parquet"],
                   help="default: from FILE's suffix (.parquet), else jsonl")  # fmt: skip
    q.set_defaults(fn=cmd_trajectories_export)


def _ids(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",") if part.strip()]
    if not ids:
        raise argparse.ArgumentTypeError(f"{text!r} names no competition; e.g. --competitions practice-titanic")
    return ids


def cmd_rollout(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.cli.running import _cluster
    from podium.gym.options import check_options
    from podium.gym.rollout import RolloutSettings, rollout
    from podium.run.group import check_name

    for ref in args.competitions:
        registry.get(ref)  # an unknown id is refused before any episode starts, with suggestions
    if args.run_group is not None:
        check_name(args.run_group)
    output_dir(args.runs_dir, "--runs-dir")
    settings = RolloutSettings(
        model=args.model, competitions=args.competitions, episodes=args.episodes, provider=args.provider,
        base_url=args.base_url, api_key_env=args.api_key_env, task=args.task, allow_sealed=args.allow_sealed,
        rows=args.rows, runs_dir=args.runs_dir, run_group=args.run_group, time_limit=args.time_limit,
        max_steps=args.max_steps, max_cost=args.max_cost, max_answer_tokens=args.max_answer_tokens,
        logprobs=args.logprobs, temperature=args.temperature, sandbox=args.sandbox, cpus=args.cpus,
        memory=args.memory, gpus=args.gpus, extra={"data_dir": args.data_dir} if args.data_dir else {},
    )  # fmt: skip
    if args.cluster is not None:
        from podium.gym.remote import cluster_options

        cluster_options(settings)  # what a cluster cannot play is refused before a cluster is asked for
    else:
        for ref in settings.competitions:  # every competition's settings, before the first episode starts
            check_options(ref, **settings.env_kwargs())
    cluster = _cluster(args)  # a wrong address is refused before anything is played
    try:
        if cluster is not None:
            from podium.gym.remote import play_batch, result_of

            batch = play_batch(settings, cluster)
            if batch.interrupted:
                raise KeyboardInterrupt
            if not batch.records and not batch.not_run:
                print("nothing left to play: the run group holds every episode asked for", file=sys.stderr)
                return 0
            results = [result_of(record) for record in batch.records]
        else:
            from podium.gym.rollout import pending

            if not pending(settings):  # as with --cluster: the same command resumes, and then has nothing to play
                print("nothing left to play: the run group holds every episode asked for", file=sys.stderr)
                return 0
            results = rollout(settings, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except KeyboardInterrupt:
        print("interrupted: the episode in progress was discarded; landed episodes stay", file=sys.stderr)
        return 130
    if not results:
        print(f"no episode landed in {args.runs_dir}", file=sys.stderr)
        return 1
    valid = sum(1 for r in results if r.valid)
    print(f"{len(results)} episode(s) played in {args.runs_dir}, {valid} with a valid "
          f"submission; mean reward {sum(r.reward for r in results) / len(results):g}", file=sys.stderr)  # fmt: skip
    return 0 if valid else 1


def cmd_trajectories_export(args: argparse.Namespace) -> int:
    from podium.gym.trajectories import export

    out = output_file(args.out, "--out")
    fmt = args.format or ("parquet" if out.suffix.lower() == ".parquet" else "jsonl")
    if not out.parent.is_dir():
        raise UsageError(f"--out {printable(args.out)}: its folder {printable(str(out.parent))} does not exist; "
                         "create it first")  # fmt: skip
    count = export([Path(p) for p in args.runs], out, fmt)
    print(f"wrote {count} episode(s) to {args.out} ({fmt})", file=sys.stderr)
    return 0

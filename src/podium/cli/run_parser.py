"""The arguments of ``podium run`` (what runs, where, with which limits, model and cluster)."""

from __future__ import annotations

import argparse
from typing import Any

from podium.agents.builtin_names import builtin_names
from podium.cli import commands, values
from podium.environments import PROFILES

__all__ = ["add_run_parser", "ended_after_flag", "latest_flag"]


def latest_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--latest",
        action="store_true",
        help="an id without @N means its newest version (corrected data and metric); default: version 1, "
        "the published definition",
    )


def ended_after_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``--ended-after DATE`` (run, list, prepare, report): ``what`` says what it narrows."""
    parser.add_argument(
        "--ended-after",
        type=values.cutoff,
        default=None,
        metavar="YYYY-MM-DD",
        help=f"only the competitions whose deadline is after this day, a model's training cutoff ({what}); those "
        "without a deadline are left out and counted (docs/contamination.md, 'Fresh splits')",
    )


def add_run_parser(sub: Any) -> None:
    """``podium run``'s parser, added to the subcommands ``sub``."""
    p = sub.add_parser(
        "run", help="run an agent on competitions in a sandbox, grade, and report (default: the offline practice suite)"
    )
    p.add_argument(
        "--agent",
        action="append",
        help=f"a built-in agent ({', '.join(builtin_names())}) or a folder with agent.yaml; repeat it to run "
        "several agents, each in its own run group GROUP-NAME, compared at the end (default: baseline)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("--competitions", help="comma-separated competition ids")
    which.add_argument(
        "--split",
        default=None,
        help=f"a named split: {values.SPLIT_NAMES} (default: practice, the offline suite; with --ended-after, all)",
    )
    p.add_argument("--seeds", type=values.count(1, "number of seeds"), default=1, help="runs per competition")
    p.add_argument(
        "--time-limit", type=values.time_limit, default="24h", help="wall-clock limit per run, e.g. 24h, 90m, 30s, 2d"
    )
    p.add_argument("--workers", type=values.count(1, "number of workers"), default=1, help="runs at once")
    p.add_argument(
        "--sandbox",
        default="bwrap",
        choices=["bwrap", "docker", "local"],
        help="isolation: bwrap (default), docker (a local engine, found through DOCKER_HOST), local (none: debugging)",
    )
    p.add_argument(
        "--cpus", type=values.cpus, default=None, help="CPU cores per run (a CFS quota; default: the agent's)"
    )
    p.add_argument(
        "--memory",
        type=values.size("memory cap"),
        default=None,
        help="memory cap per run, e.g. 16G (default: the agent's)",
    )
    p.add_argument(
        "--disk",
        type=values.size("disk cap"),
        default=None,
        help="cap on what a run writes to /home/submission, code and logs, e.g. 50G (default: the agent's)",
    )
    p.add_argument(
        "--gpus",
        type=values.count(0, "number of GPUs"),
        default=None,
        help="GPUs per run; each run gets its own (default: the agent's, else 0)",
    )
    p.add_argument(
        "--hardware",
        choices=["mlebench"],
        default=None,
        help="a named compute setting instead of --cpus, --memory and --gpus: mlebench (the paper's 36 vCPUs, "
        "440 GB, one 24 GB A10); what this machine cannot give is said before the runs start",
    )
    p.add_argument(
        "--run-group",
        default="default",
        help="name of this batch of runs; a rerun skips its finished runs and refuses other settings",
    )
    p.add_argument(
        "--redo",
        choices=["failed", "all"],
        default=None,
        help="run again the group's runs without a valid submission (failed), or every run (all, also to change "
        "the group's settings); each new run replaces the old one",
    )
    p.add_argument("--model", default=None, help="the model the agent's code is written by (default: the agent's llm:)")
    p.add_argument(
        "--provider", default=None, choices=["openai", "anthropic", "openrouter"], help="the model's provider"
    )
    p.add_argument("--base-url", default=None, help="the provider's API address, e.g. a local vLLM or llama.cpp server")
    p.add_argument("--max-cost", type=values.money, default=None, metavar="USD", help="the cost budget of each run")
    p.add_argument(
        "--max-answer-tokens",
        type=values.count(1, "answer cap"),
        default=None,
        metavar="N",
        help="cap each model answer at N tokens (for small local models that ramble; default: the agent's llm:)",
    )
    p.add_argument(
        "--env",
        default=None,
        metavar="PROFILE",
        help=f"the environment the agent's code runs with: {', '.join(PROFILES)}, a requirements file, or host "
        "(podium's own Python) (default: the agent's environment:)",
    )
    p.add_argument("--runs-dir", default="runs", help="where run folders and the index live")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    p.add_argument(
        "--cluster",
        default=None,
        metavar="ray|ray:HOST:PORT|ray://HOST:PORT",
        help="run each (competition, seed) as a task on a running Ray cluster: ray (RAY_ADDRESS, else this "
        "machine's cluster), ray:HOST:6379 (the head) or ray://HOST:10001 (Ray Client); graded and landed here. "
        "Start one on this machine with: ray start --head --port 6379 (docs/scaling.md)",
    )
    p.add_argument(
        "--ray-resource",
        action="append",
        default=None,
        metavar="NAME[=N]",
        help="with --cluster: a custom resource each run asks for (nodes declare it: ray start --resources); repeatable",
    )
    p.add_argument(
        "--node-data-dir",
        default=None,
        metavar="DIR",
        help="with --cluster: the prepared data as the nodes see it (a shared path, verified by checksum on each "
        "node); default: the driver ships each competition's public folder through Ray's object store",
    )
    ended_after_flag(p, "of --competitions or --split; without either, of every registered competition")
    latest_flag(p)
    p.set_defaults(fn=commands.cmd_run)

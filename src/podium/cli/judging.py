"""``podium audit``'s flags for the LLM judge (as ``podium run``'s model flags) and the plagiarism check's kernels,
and the judge's settings checked before any run is audited."""

from __future__ import annotations

import argparse
import os

from podium.cli import values
from podium.cli.auditing import cmd_audit
from podium.errors import UsageError

__all__ = ["add_judge_and_kernels_flags", "check_judge_access"]


def add_judge_and_kernels_flags(p: argparse.ArgumentParser) -> None:
    """Add --model, --provider, --base-url, --max-cost, --judge-max-chunks (the judge) and --kernels (plagiarism) to
    ``audit``'s parser; each reaches the checks as the option of its name (``model``, ``provider``, ``base_url``,
    ``max_cost``, ``judge_max_chunks``, ``kernels``). The command then checks the judge's settings first (:func:`check_judge_access`)."""
    p.add_argument("--model", default=None, help="the judge's model: names it and makes --checks judge run")
    p.add_argument(
        "--provider", default=None, choices=["openai", "anthropic", "openrouter"], help="the judge's provider"
    )
    p.add_argument("--base-url", default=None, help="the provider's API address, e.g. a local vLLM or llama.cpp server")
    p.add_argument(
        "--max-cost", type=values.money, default=None, metavar="USD", help="the judge's cost budget for each run"
    )
    p.add_argument(
        "--judge-max-chunks",
        type=values.count(1, "number of chunks"),
        default=None,
        metavar="N",
        help="the most chunks of 128,000 characters the judge reads of a run (default 40); a run with more left "
        "unread is unclear",
    )
    p.add_argument(
        "--kernels",
        default=None,
        metavar="DIR",
        help="public notebooks as DIR/<competition>/*.py and *.ipynb (default: DATA/<id>/kernels/ from "
        "`podium kernels download`)",
    )
    p.set_defaults(
        fn=_audit, audit_options=["model", "provider", "base_url", "max_cost", "judge_max_chunks", "kernels"]
    )


def _audit(args: argparse.Namespace) -> int:
    check_judge_access(args)
    return cmd_audit(args)


def check_judge_access(args: argparse.Namespace) -> None:
    """Refuse up front (a usage error: exit 2, nothing audited) a judge that could not run: its flags wrong, a cost
    budget for a model without a price, or no API key in podium's environment, as ``podium run`` refuses them.
    Nothing to check when no model is named or ``--checks`` leaves the judge out."""
    from podium.agents.llm import LLMConfig

    if args.model is None:
        return
    if args.checks is not None and "judge" not in {n.strip() for n in args.checks.split(",")}:
        return
    config = LLMConfig.from_options(args.provider, args.model, args.base_url, args.max_cost)
    config.check_prices()
    variable = config.provider.api_key_env
    if not os.environ.get(variable):
        raise UsageError(
            f"--model {args.model}: the judge's provider {config.provider.name} needs an API key in podium's "
            f"environment. Fix: set {variable} (as for podium run), or leave the judge out with --checks"
        )

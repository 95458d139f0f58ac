"""``podium audit``'s flags for the LLM judge (as ``podium run``'s model flags) and the plagiarism check's kernels."""

from __future__ import annotations

import argparse

from podium.cli import values

__all__ = ["add_judge_and_kernels_flags"]


def add_judge_and_kernels_flags(p: argparse.ArgumentParser) -> None:
    """Add --model, --provider, --base-url, --max-cost (the judge) and --kernels (plagiarism) to ``audit``'s parser;
    each reaches the checks as the option of its name (``model``, ``provider``, ``base_url``, ``max_cost``,
    ``kernels``)."""
    p.add_argument("--model", default=None, help="the judge's model: names it and makes --checks judge run")
    p.add_argument(
        "--provider", default=None, choices=["openai", "anthropic", "openrouter"], help="the judge's provider"
    )
    p.add_argument("--base-url", default=None, help="the provider's API address, e.g. a local vLLM or llama.cpp server")
    p.add_argument(
        "--max-cost", type=values.money, default=None, metavar="USD", help="the judge's cost budget for each run"
    )
    p.add_argument(
        "--kernels",
        default=None,
        metavar="DIR",
        help="public notebooks as DIR/<competition>/*.py and *.ipynb (default: DATA/<id>/kernels/ from "
        "`podium kernels download`)",
    )
    p.set_defaults(audit_options=["model", "provider", "base_url", "max_cost", "kernels"])

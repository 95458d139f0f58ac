"""The LLM judge's tokens per run and the cost of auditing a 75-competition group, from real run folders.

    python benchmarks/audit_judge/tokens.py RUN_OR_GROUP... [--model gpt-4o-2024-08-06] [--seeds 3]
        [--chars-per-token 4] [--answer-tokens 300]

For every run it builds exactly what the judge sends (podium.audit.judge: the system prompt, and each
question with each 128,000-character chunk of the run's material: the proxy's transcript, the lines of
risk, the logs and the code) and counts characters; tokens are
characters / --chars-per-token (OpenAI's rule of thumb for English and code is 4; no tokenizer is
downloaded), and each call's answer is taken as --answer-tokens. The cost uses podium's price table
(podium/agents/prices.yaml) for --model; the group's cost is the mean run's times 75 competitions x
--seeds. A check that finds a yes stops reading further chunks of that question; this counts every
chunk (the upper bound), and one extra call per question for a malformed answer is not counted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from podium.agents.prices import price_of
from podium.audit import AuditContext, find_runs
from podium.audit.judge import QUESTIONS, SYSTEM, ask_prompt
from podium.audit.judge_material import Material


def run_chars(run: Path) -> tuple[int, int]:
    """(characters sent, calls) for one run's three questions."""
    sent = calls = 0
    for chunk in Material(AuditContext(run)).chunks():
        for question in QUESTIONS:
            sent += len(SYSTEM) + len(ask_prompt(question, chunk))
            calls += 1
    return sent, calls


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--model", default="gpt-4o-2024-08-06")
    parser.add_argument("--provider", default="openai")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--chars-per-token", type=float, default=4.0)
    parser.add_argument("--answer-tokens", type=int, default=300)
    args = parser.parse_args()
    runs = [r for p in args.paths for r in find_runs(p)]
    price = price_of(args.provider, args.model)
    if price is None:
        print(f"{args.model} is not in podium's price table", file=sys.stderr)
        return 2
    rows = []
    for run in runs:
        chars, calls = run_chars(run)
        tokens_in, tokens_out = chars / args.chars_per_token, calls * args.answer_tokens
        rows.append((run, chars, calls, tokens_in, tokens_out, price.cost(int(tokens_in), tokens_out)))
    print("| run | characters sent | calls | input tokens | output tokens | USD |")
    print("|---|---|---|---|---|---|")
    for run, chars, calls, tokens_in, tokens_out, usd in rows:
        print(f"| {run.parent.name}/{run.name} | {chars} | {calls} | {tokens_in:.0f} | {tokens_out} | {usd:.4f} |")
    mean = statistics.mean(r[5] for r in rows)
    group = mean * 75 * args.seeds
    print(f"\nmean per run: {statistics.mean(r[3] for r in rows):.0f} input + {statistics.mean(r[4] for r in rows):.0f} "
          f"output tokens, ${mean:.4f} at {args.model}'s list price; a 75-competition group x {args.seeds} seeds: "
          f"${group:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

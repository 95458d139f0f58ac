"""``podium familiarity``: its flags and what it does (the scoring is :mod:`podium.audit.familiarity`'s)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from podium.cli import values
from podium.errors import UsageError

__all__ = ["add_familiarity_parser", "cmd_familiarity", "samples_value"]


def samples_value(text: str) -> int | None:
    """``--samples``: a positive count, or 0 / ``all`` for every token (None)."""
    if text.strip().lower() in ("0", "all"):
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of token positions, or 0 / all")
    return value


def add_familiarity_parser(sub: Any) -> None:
    """Add ``familiarity`` to the subcommands ``sub``."""
    p = sub.add_parser(
        "familiarity",
        help="how familiar a model is with each competition's texts (mean probability of each next token)",
        description="For each competition, the model's mean probability of each actual next token of the "
        "documents you supply (--documents), over N positions drawn with a fixed seed, and apart from them the "
        "floor: the same over podium's own description, which no model read in training and which so measures "
        "no contamination. Without --documents only the floor is scored. See docs/contamination.md.",
    )
    model = p.add_mutually_exclusive_group(required=True)
    model.add_argument("--model-file", default=None, metavar="GGUF", help="a local GGUF model (llama-cpp-python)")
    model.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="a server that returns prompt logprobs (OpenAI-compatible completions with echo and logprobs, e.g. "
        "vLLM; not llama-cpp-python's server, whose echo logprobs are off by one); needs --model",
    )
    p.add_argument("--model", default=None, metavar="NAME", help="the server's model name (with --base-url)")
    p.add_argument(
        "--api-key-env",
        default=None,
        metavar="NAME",
        help="send the key in the environment variable NAME to --base-url (default: a key only to a known "
        "provider's address, e.g. OPENAI_API_KEY to https://api.openai.com; none to any other)",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument("-c", "--competition", action="append", help="competition id (repeatable)")
    which.add_argument(
        "--split", default=None, help=f"every competition of a split: {values.SPLIT_NAMES} (default: split75, all 75)"
    )
    p.add_argument(
        "--samples",
        type=samples_value,
        default=1000,
        metavar="N",
        help="token positions drawn per document and competition, or 0 / all for every token "
        "(default: 1000, as the published experiment)",
    )
    p.add_argument("--seed", type=int, default=0, help="the seed the positions are drawn with")
    p.add_argument(
        "--documents",
        default=None,
        metavar="DIR",
        help="more texts per competition: DIR/<id>/*.md and *.txt (e.g. Kaggle's own description, discussion posts)",
    )
    p.add_argument("--context", type=int, default=2048, metavar="TOKENS", help="window of a local model, in tokens")
    p.add_argument("--threads", type=int, default=None, help="CPU threads of a local model (default: llama.cpp's)")
    p.add_argument(
        "--cache-dir", default=None, help="token probabilities cached here (default: ~/.cache/podium/familiarity)"
    )
    p.add_argument("--output", default=None, metavar="FILE", help="write the JSON here (default: standard output)")
    p.set_defaults(fn=cmd_familiarity)


def _scorer(args: argparse.Namespace) -> Any:
    from podium.audit.logits import LlamaCppScorer, ServerScorer

    if args.model_file:
        if args.model or args.api_key_env:
            raise UsageError(
                "--model and --api-key-env go with a server: give them with --base-url, or drop them with --model-file"
            )
        return LlamaCppScorer(Path(args.model_file), context=args.context, threads=args.threads)
    if not args.model:
        raise UsageError("--base-url needs --model NAME, the model the server serves")
    return ServerScorer(args.base_url, args.model, api_key_env=args.api_key_env)


def cmd_familiarity(args: argparse.Namespace) -> int:
    import sys

    from podium import registry
    from podium.audit.familiarity import MEASURES, ProbabilityCache, default_cache_dir, familiarity
    from podium.cli.commands import write_output

    refs = list(args.competition) if args.competition else registry.split_ids(args.split or "split75")
    competitions = [registry.get(ref) for ref in refs]
    scorer = _scorer(args)
    cache = ProbabilityCache(Path(args.cache_dir) if args.cache_dir else default_cache_dir())
    result = familiarity(
        competitions,
        scorer,
        samples=args.samples,
        seed=args.seed,
        documents_dir=Path(args.documents) if args.documents else None,
        cache=cache,
    )
    write_output(json.dumps(result, indent=1) + "\n", args.output)
    if result["measures"] == MEASURES[False]:
        print(
            "podium: note: this measured no contamination: without --documents DIR, only podium's own descriptions "
            "(the floor) were scored; give the texts the model may have read (Kaggle's pages, its discussions)",
            file=sys.stderr,
        )
    return 0

"""``podium``'s entry point: one command run, its errors turned into the exit statuses the package docstring
lists."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence

from podium.cli.commands import EXIT_BROKEN_PIPE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_USAGE
from podium.cli.parser import build_parser, join_values
from podium.errors import PodiumError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one podium command; returns its exit status (see the module docstring)."""
    try:
        try:
            code = _main(sys.argv[1:] if argv is None else argv)
        except SystemExit as exit_:  # argparse: --help, --version, a usage error
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else EXIT_USAGE)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader went away (podium list | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(join_values(argv))
        if getattr(args, "competitions_dir", None):
            from podium.declarations import use_dirs

            use_dirs(args.competitions_dir)  # into $PODIUM_COMPETITIONS_PATH: the processes podium starts see them
        code: int = args.fn(args)
        return code
    except PodiumError as exc:
        print(f"podium: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\npodium: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise
    except Exception:
        traceback.print_exc()
        print(
            "podium: internal error: the traceback above is a bug in podium, not a problem with your input; "
            "please report it with the command you ran",
            file=sys.stderr,
        )
        return EXIT_BUG

"""docs/commands.md, made from the parser itself, so that ``--help`` and the docs cannot disagree.

    python -m podium.cli.reference > docs/commands.md      # after changing a flag or a help text

``tests/test_cli_reference.py`` fails while the committed page differs from what this prints.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from podium.cli.parser import build_parser

__all__ = ["reference"]

#: The width help is wrapped at (a terminal's width would make the page differ by machine).
WIDTH = 100

_HEAD = """# Command reference

Every command's `--help`, as podium prints it. This page is generated from the parser
(`python -m podium.cli.reference > docs/commands.md`; a test fails while it differs), so it says what the
installed podium takes. The stage pages (linked from the [README](../README.md)) say what each command is for.

Errors are one line, `podium: error: ...`, naming the value and the fix; a traceback means a bug in podium and
says so. Exit status: 0 done; 1 done with a failed outcome (`grade-sample` or `validate` of an invalid or missing
submission, a `run` in which no run made a submission or a run could not run, a `verify` mismatch, a failed
`prepare`, a `bundle verify` difference); 2 a usage error or refusal; 70 a bug; 130 Ctrl-C; 141 when the reader
of the output goes away (`podium list | head`), quietly.
"""


@contextmanager
def _columns(width: int) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def _commands(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases name one parser twice
                yield sub
                yield from _commands(sub)


def reference() -> str:
    """The Markdown page: a contents line, then each command's help in a code block, in the parser's order."""
    with _columns(WIDTH):
        parser = build_parser()
        parser.prog = "podium"
        commands = list(_commands(parser))
        contents = ", ".join(f"[`{c.prog}`](#{c.prog.replace(' ', '-')})" for c in commands)
        parts = [_HEAD, contents, "", "## podium", "", "```", parser.format_help().rstrip(), "```"]
        for command in commands:
            parts += ["", f"## {command.prog}", "", "```", command.format_help().rstrip(), "```"]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())

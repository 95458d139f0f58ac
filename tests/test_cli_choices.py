"""--help lists every choice that works, from the code's own lists, and every option says what it does
(issue 35 §5.9)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from podium.cli.parser import build_parser
from podium.environments import PROFILES
from podium.registry import SPLITS


def _parsers(parser: argparse.ArgumentParser, prog: str = "podium") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{prog} {name}")


def _options() -> Iterator[tuple[str, argparse.Action]]:
    for prog, parser in _parsers(build_parser()):
        for action in parser._actions:
            if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                yield prog, action


def test_every_split_flag_lists_every_split() -> None:
    flags = [(prog, a) for prog, a in _options() if a.dest == "split"]
    assert len(flags) >= 6
    for prog, action in flags:
        missing = [name for name in SPLITS if name not in (action.help or "")]
        assert not missing, f"{prog} --split help lacks {missing}: {action.help}"


def test_the_environment_flags_list_every_profile() -> None:
    helps = {(prog, a.dest): a.help or "" for prog, a in _options()}
    for key in (("podium env build", "profile"), ("podium run", "env")):
        missing = [name for name in PROFILES if name not in helps[key]]
        assert not missing, f"{key} lacks {missing}"
    assert "host" in helps[("podium run", "env")]


def test_every_option_has_help() -> None:
    bare = [f"{prog} {a.option_strings[-1]}" for prog, a in _options() if not (a.help or "").strip()]
    assert not bare, bare

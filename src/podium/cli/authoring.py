"""``podium new ID``: write a competition's declaration (docs/declaring.md, "Adding a competition")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["add_new_parser", "cmd_new"]


def add_new_parser(sub: argparse._SubParsersAction) -> None:
    """``podium new``'s parser, beside the other commands'."""
    p = sub.add_parser(
        "new",
        help="write a competition's declaration: from Kaggle (its metadata, pages, leaderboard, notebooks, data), "
        "or from files you have (--from, --leaderboard, --description), or from your own data",
        description="Writes OUT/ID/ (competition.yaml with comments on what was inferred and why, description.md, "
        "leaderboard.json, kernels.txt), then prints the next commands. Without --from it asks Kaggle with its "
        "client (credentials needed); with --from it reads only your files.",
    )
    p.add_argument("id", help="the competition's id: its Kaggle slug, or a name of your own")
    p.add_argument("--out", default="competitions", help="the folder of your declarations; ID/ is written in it")
    p.add_argument("--from", dest="source", default=None, metavar="DIR", help="the raw files: a folder or Kaggle's zip")
    p.add_argument("--kaggle", action="store_true", help="with --from: still ask Kaggle for its metadata and board")
    p.add_argument("--leaderboard", default=None, metavar="CSV", help="Kaggle's leaderboard export (offline)")
    p.add_argument("--description", default=None, metavar="FILE", help="the competition's description (offline)")
    p.add_argument("--train", default=None, metavar="FILE", help="the labelled table among the raw files")
    p.add_argument("--target", action="append", metavar="COL", help="a target column (repeatable)")
    p.add_argument("--id", dest="id_column", action="append", metavar="COL", help="the id column (repeatable)")
    p.add_argument("--metric", default=None, metavar="NAME", help="podium's metric name or Kaggle's")
    p.add_argument("--metric-option", action="append", metavar="KEY=VALUE", help="an option of the metric (YAML)")
    p.add_argument(
        "--metric-input", action="append", metavar="KEY=COL", help="a column the metric takes from the answers"
    )
    p.add_argument("--data-dir", default=None, help="online: where the data zip goes (default: $PODIUM_DATA_DIR)")
    p.set_defaults(fn=cmd_new)


def _options(given: list[str]) -> dict[str, Any]:
    import yaml  # here, not when the parser is built: podium --help reads no YAML

    options: dict[str, Any] = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--metric-option '{printable(item, 80)}': write KEY=VALUE, e.g. k=5")
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise UsageError(f"--metric-option '{printable(item, 80)}': the value is not YAML. Fix: quote it") from None
    return options


def _inputs(given: list[str]) -> dict[str, str]:
    inputs = {}
    for item in given:
        key, sep, column = item.partition("=")
        if not sep or not key.strip() or not column.strip():
            raise UsageError(f"--metric-input '{printable(item, 80)}': write KEY=COLUMN, e.g. groups=type")
        inputs[key.strip()] = column.strip()
    return inputs


def cmd_new(args: argparse.Namespace) -> int:
    from podium.author import NewRequest, new_competition
    from podium.cli.outputs import output_dir

    request = NewRequest(
        competition_id=args.id,
        out=output_dir(Path(args.out).expanduser().absolute(), "--out"),
        source=Path(args.source).expanduser() if args.source else None,
        kaggle=args.kaggle,
        train=args.train,
        targets=tuple(args.target or ()),
        ids=tuple(args.id_column or ()),
        metric=args.metric,
        metric_options=_options(args.metric_option or []),
        metric_inputs=_inputs(args.metric_input or []),
        leaderboard=Path(args.leaderboard).expanduser() if args.leaderboard else None,
        description=Path(args.description).expanduser() if args.description else None,
        data_dir=output_dir(Path(args.data_dir).expanduser(), "--data-dir") if args.data_dir else None,
    )
    if args.kaggle and request.source is None:
        raise UsageError("--kaggle goes with --from DIR (without --from, podium new asks Kaggle anyway)")
    written = new_competition(request)
    for name in written.files:
        print(f"wrote    {printable(str(written.folder / name), 300)}")
    for line in written.inferred:
        print(f"inferred {line}")
    for todo in written.todos:
        print(f"todo     {printable(todo, 300)}")
    if written.todos:
        print(f"next     edit {printable(str(written.folder / 'competition.yaml'), 300)}: decide each TODO")
    for command in written.next_commands:
        print(f"next     {command}")
    return 0

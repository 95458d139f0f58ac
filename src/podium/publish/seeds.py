"""Seeds that are not independent runs, found by ``podium bundle verify`` from the files' own sha256s.

A seed copied from another (its files byte for byte another seed's, only the record's ``seed`` changed) reads in a
report as one more seed, and so does an honest agent that ignores its seed: both are shown as a difference, in
words that tell them apart where the files can. Runs are compared across the bundle's seeds of one competition
(at one version) and one agent folder (its hash), in every group. And a run id (group, competition, seed) that
two records claim is a difference too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from podium.publish.unpack import shown

__all__ = ["check_seeds"]

#: A run's own files, written for it by the audit and the harness: never compared.
_OWN = ("record.json", "audit.json")


def _order(place: str) -> tuple[str, ...]:
    _, group, competition, seed = place.split("/")
    return group, competition, seed.rjust(20, "0")


def check_seeds(
    records: Mapping[str, Mapping[str, Any] | None],
    files: Mapping[str, tuple[str, int]],
    differ: Callable[[str], None],
) -> None:
    """``records``: each run's record by its place (``runs/GROUP/ID/SEED``); ``files``: every member's (sha256,
    size). One line for each run that repeats an earlier one, or whose record claims an earlier run's id."""
    digests: dict[str, list[tuple[str, str]]] = {place: [] for place in records}
    for name, (sha256, _) in files.items():
        place, _, inside = name.rpartition("/")
        while place and place not in digests:
            place, _, parent = place.rpartition("/")
            inside = f"{parent}/{inside}"
        if place and inside not in _OWN:
            digests[place].append((inside, sha256))
    seen: dict[tuple[Any, ...], list[str]] = {}
    claimed: dict[tuple[str, ...], str] = {}
    for place in sorted(records, key=_order):
        record = records[place]
        if record is None:
            continue
        where = shown(place.removeprefix("runs/"))
        claim = tuple(str(record.get(k)) for k in ("run_group", "competition_id", "seed"))
        if claim in claimed:
            differ(f"{where}: run id {shown('/'.join(claim))} repeats: the record at {claimed[claim]} claims it too")
        claimed.setdefault(claim, where)
        own = sorted(digests[place])
        submission = [(name, sha) for name, sha in own if name.startswith("submission/")]
        key = (place.split("/")[2], str(record.get("competition_version")), str(record.get("agent_hash")))
        for other in seen.get(key, ()):
            line = _repeats(where, place, own, submission, record, other, records[other], digests[other])
            if line is not None:
                differ(line)
                break
        seen.setdefault(key, []).append(place)


def _repeats(
    where: str,
    place: str,
    own: list[tuple[str, str]],
    submission: list[tuple[str, str]],
    record: Mapping[str, Any],
    other: str,
    other_record: Mapping[str, Any] | None,
    other_files: list[tuple[str, str]],
) -> str | None:
    theirs = sorted(other_files)
    named = f"seed {shown(other.split('/')[3])} ({shown(other.removeprefix('runs/'))})"
    if own and own == theirs:
        if other_record is not None and _but_seed(record) == _but_seed(other_record):
            return f"{where}: identical to {named}: every file byte for byte, its record too but for its seed: a copy"
        return (
            f"{where}: identical to {named}: every file but record.json byte for byte: a copied run, or a "
            "deterministic agent that ignores its seed"
        )
    if submission and submission == [(n, s) for n, s in theirs if n.startswith("submission/")]:
        return (
            f"{where}: its submission is byte for byte that of {named}: a copied submission, or a deterministic "
            "agent that ignores its seed"
        )
    return None


def _but_seed(record: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in record.items() if k != "seed"}, sort_keys=True, default=str)

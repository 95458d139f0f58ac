"""The report's three headline readings of a label's runs over a split, side by side.

- ``published``: the published definitions, version 1 of every competition, as the leaderboard reads
  them. A run graded by a later version that shares version 1's data carries its version-1 grade in
  ``other_versions`` and is read by it; a run of a version with other data has no version-1 grade and
  is read as graded (named in ``not_version_1``).
- ``corrected``: podium's corrected reading, the newest version of every competition that grades the
  run's data (``changed`` names the competitions read at a later version). A competition whose newest
  version changes the data cannot be read so from these runs: ``not_newest`` names it and the command
  that runs that version.
- ``without_leaks``: the published reading over the split less the competitions whose version-1 data
  has a known leak (their declared notes that name one, :func:`podium.audit.known_leakage`); each
  excluded competition is named with the reason.

Each block is the published script's output for those rows (:func:`podium.report.aggregate.published_numbers`)
with its ``definitions`` in words, or ``{"error": ...}`` where the published rules cannot aggregate it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from podium.report.aggregate import AggregationError, build_seeds, published_numbers
from podium.report.group import corrected_rows, definitions

__all__ = ["READINGS", "leaky_competitions", "readings", "version1_rows", "version_facts"]

#: The readings in the order every format shows them, with their column titles.
READINGS = {
    "published": "published (v1)",
    "corrected": "corrected (newest)",
    "without_leaks": "without known leaks",
}


def version1_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows read at version 1 where their grade carries it; and ``ID@V`` of the runs that cannot be
    (a version with other data than version 1's), which stay as graded."""
    out, kept = [], set()
    for row in rows:
        if row["competition_version"] == 1:
            out.append(dict(row))
            continue
        first = [v for v in row.get("other_versions") or () if v.get("competition_version") == 1]
        if first:
            out.append({**row, **first[0]})
        else:
            out.append(dict(row))
            kept.add(f"{row['competition_id']}@{row['competition_version']}")
    return out, sorted(kept)


def leaky_competitions(competition_ids: Sequence[str], cache: dict[str, list[str]]) -> dict[str, str]:
    """competition id -> why its version-1 data is known to leak (the first declared fact), for those of
    ``competition_ids`` that have one; ``cache`` keeps each competition's facts between calls."""
    from podium.audit import known_leakage

    out = {}
    for cid in competition_ids:
        if cid not in cache:
            cache[cid] = known_leakage(cid, 1)
        if cache[cid]:
            out[cid] = cache[cid][0]
    return out


def _newest_missing(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The competitions whose corrected rows stay at an older version than their newest: that version changes
    the data (these runs cannot be graded by it), or the grades do not carry it (a grading report, a run
    graded before podium graded every version of the same data)."""
    from podium import registry
    from podium.errors import PodiumError

    read_at: dict[str, int] = {}
    for row in rows:
        read_at[row["competition_id"]] = max(read_at.get(row["competition_id"], 0), row["competition_version"])
    out = []
    for cid, version in sorted(read_at.items()):
        try:
            competition = registry.get(cid, version)
        except PodiumError:
            continue  # a competition podium does not know (a foreign grading report)
        newest = max(competition.versions)
        if newest <= version:
            continue
        if competition.data_versions.get(newest) == competition.data_version:
            reason = f"version {newest} grades the same data, but these grades do not carry it"
            fix = f"grade the runs' submissions at {cid}@{newest} (podium grade)"
        else:
            reason = f"version {newest} changes the data"
            fix = f"prepare and run {cid}@{newest}"
        out.append({"competition_id": cid, "read_at": version, "newest": newest, "reason": reason, "fix": fix})
    return out


def _numbers(
    rows: Sequence[Mapping[str, Any]], ids: Sequence[str], *, seeds: int, pad_missing: bool, split: str
) -> dict[str, Any]:
    try:
        built = build_seeds(rows, ids, seeds=seeds, pad_missing=pad_missing, split=split)
    except AggregationError as exc:
        return {"error": str(exc)}
    return published_numbers(built, len(ids))


def readings(
    runs: Sequence[Mapping[str, Any]],
    ids: Sequence[str],
    *,
    seeds: int,
    pad_missing: bool,
    split: str,
    leaks: Mapping[str, str],
) -> dict[str, Any]:
    """The three readings of ``runs`` (a label's rows in reading order) over the split ``ids`` (see the
    module docstring); ``leaks`` maps the split's leaky competitions to their reason."""
    wanted = set(ids)
    in_split = [r for r in runs if r["competition_id"] in wanted]
    first, not_first = version1_rows(in_split)
    newest = corrected_rows(in_split)
    changed = sorted(
        {f"{n['competition_id']}@{n['competition_version']}" for n, f in zip(newest, first, strict=True)
         if n["competition_version"] != f["competition_version"]}
    )  # fmt: skip
    kept_ids = [cid for cid in ids if cid not in leaks]
    published = {"definitions": definitions(first), "not_version_1": not_first}
    corrected = {"definitions": definitions(newest), "changed": changed, "not_newest": _newest_missing(newest)}
    excluded = [{"competition_id": cid, "reason": leaks[cid]} for cid in ids if cid in leaks]
    without = {"definitions": definitions(first), "competitions": len(kept_ids), "excluded": excluded}
    published.update(_numbers(first, ids, seeds=seeds, pad_missing=pad_missing, split=split))
    corrected.update(_numbers(newest, ids, seeds=seeds, pad_missing=pad_missing, split=split))
    if kept_ids:
        less = f"{split} less its leaky competitions"
        without.update(_numbers(first, kept_ids, seeds=seeds, pad_missing=pad_missing, split=less))
    else:
        without["error"] = f"every competition of split {split} has a known leak"
    return {"published": published, "corrected": corrected, "without_leaks": without}


def version_facts(competition_ids: Sequence[str], leaks: Mapping[str, list[str]]) -> dict[str, Any]:
    """Each competition's versions (number, the version whose data it grades, what it changes) and its
    version-1 known leakage: what the HTML report links every competition to."""
    from podium import registry
    from podium.errors import PodiumError

    out: dict[str, Any] = {}
    for cid in sorted(set(competition_ids)):
        try:
            first = registry.get(cid)
            versions = [registry.get(cid, v) for v in first.versions]
        except PodiumError:
            continue
        out[cid] = {
            "versions": [
                {"version": c.version, "data_version": c.data_version, "changes": " ".join(c.changes.split())}
                for c in versions
            ],
            "known_leakage": list(leaks.get(cid) or []),
        }
    return out

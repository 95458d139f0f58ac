"""The sha256 of every prepared file of every competition, prepared from its tiny generated raw folder.

Used to show that a change to the prepare machinery (a prepare.py turned into ``prepare: split:``
in competition.yaml, a shared helper) leaves every prepared byte as it was:

    python scripts/prepared_digest.py --raw /tmp/raws --out before.json     # on the old code
    python scripts/prepared_digest.py --raw /tmp/raws --compare before.json # on the new code

Every version that prepares its own data (not ``same_data: true``) is prepared. ``--raw DIR``
keeps the raw folders: a competition whose ``DIR/<id>/`` exists is prepared from it, otherwise its
fixture (``podium.fixtures.make_raw``) is written there first. Comparing against raw folders
written by the old code matters once a prepare.py (and with it its ``make_raw``) is gone; archives
a prepare builds carry the raw files' times, so compare on the same raw folders.

``--pins tests/prepared_pins.json`` writes what tests/test_prepare.py checks: one digest per
declarative competition (``prepare: split:``), of its prepared checksums less description.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from podium import registry
from podium.competition import Competition
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw
from podium.paths import CompetitionPaths


def _prepares(comp: Competition) -> bool:
    return comp.has_prepare_step


def _own_data_versions(cid: str) -> list[Competition]:
    first = registry.get(cid)
    return [registry.get(cid, v) for v in first.versions if first.data_versions.get(v) == v]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest(comp: Competition, raw: Path, work: Path) -> dict[str, str]:
    """sha256 of every file under prepared/public and prepared/private (relative path -> hex)."""
    prepare_competition(comp, work, source=raw)
    prepared = CompetitionPaths(work, comp.id).prepared
    return {
        p.relative_to(prepared).as_posix(): _sha256(p)
        for side in ("public", "private")
        for p in sorted((prepared / side).rglob("*"))
        if p.is_file()
    }


def pin(checksums: dict[str, str]) -> str:
    """One digest of a prepared record's checksums, less the copied description."""
    lines = [f"{path} {digest}" for path, digest in sorted(checksums.items()) if path != "public/description.md"]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def write_pins(path: Path) -> None:
    pins = {}
    with tempfile.TemporaryDirectory(prefix="podium-pins-") as tmp:
        for cid in registry.ids():
            comp = registry.get(cid)
            if comp.prepare.get("split"):
                raw = make_raw(comp, Path(tmp) / "raw" / cid)
                prepare_competition(comp, Path(tmp) / "data", source=raw)
                record = CompetitionPaths(Path(tmp) / "data", comp.id).record()
                assert record is not None
                pins[comp.ref] = pin(record["checksums"])
    path.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{path}: {len(pins)} declarative competitions pinned", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="competition ids (default: all)")
    parser.add_argument("--raw", type=Path, help="keep (and reuse) the raw fixture folders here")
    parser.add_argument("--out", type=Path, help="write the digests as JSON")
    parser.add_argument("--compare", type=Path, help="compare with digests written earlier; exit 1 on a difference")
    parser.add_argument("--pins", type=Path, help="write the declarative competitions' pins (tests/prepared_pins.json)")
    args = parser.parse_args(argv)
    if args.pins:
        write_pins(args.pins)
        return 0

    ids = args.ids or registry.ids()
    digests: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="podium-digest-") as tmp:
        raws = args.raw or Path(tmp) / "raw"
        for cid in ids:
            for comp in _own_data_versions(cid):
                if not _prepares(comp):
                    continue
                raw = raws / cid
                if not raw.is_dir():
                    make_raw(comp, raw)
                digests[comp.ref] = digest(comp, raw, Path(tmp) / "data" / comp.ref)
                print(f"{comp.ref}: {len(digests[comp.ref])} files", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.compare:
        expected = json.loads(args.compare.read_text(encoding="utf-8"))
        problems = []
        for ref in sorted(expected.keys() | digests.keys()):
            if ref not in digests:
                if not args.ids or ref.split("@")[0] in ids:
                    problems.append(f"{ref}: not prepared")
                continue
            if ref not in expected:
                problems.append(f"{ref}: new")
                continue
            old, new = expected[ref], digests[ref]
            problems += [f"{ref}: {k} missing" for k in sorted(old.keys() - new.keys())]
            problems += [f"{ref}: {k} new" for k in sorted(new.keys() - old.keys())]
            problems += [f"{ref}: {k} changed" for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
        for line in problems:
            print(line)
        compared = sum(1 for ref in digests if ref in expected)
        print(f"{compared} prepared versions compared, {len(problems)} differences")
        return 1 if problems else 0
    if not args.out:
        json.dump(digests, sys.stdout, indent=1, sort_keys=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

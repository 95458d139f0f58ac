"""Write tests/timings.json, the seconds each test file (each xdist group) took, from a JUnit XML report.

The suite's workers take the files longest first (tests/conftest.py), so that no long file starts last and
runs alone at the end. Refresh the figures after a file's time changes much:

    OMP_NUM_THREADS=1 python -m pytest -p no:cacheprovider --junitxml=/tmp/suite.xml
    python scripts/test_timings.py /tmp/suite.xml

A test's group is the part of its name after ``@`` (xdist's ``loadgroup`` writes it there). The figures only
order the work: a stale or missing one costs time, never a test.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "timings.json"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/test_timings.py JUNIT_XML (from pytest --junitxml under the workers)")
        return 2
    seconds: Counter[str] = Counter()
    for case in ET.parse(argv[0]).getroot().iter("testcase"):
        name = case.get("name", "")
        if "@" not in name:
            print(f"{argv[0]}: test {name!r} has no @group: run the suite under the workers (-n 4 --dist loadgroup)")
            return 2
        seconds[name.rsplit("@", 1)[1]] += float(case.get("time") or 0)
    table = {group: round(value, 1) for group, value in sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))}
    OUT.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(table)} groups, {sum(table.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""What a command loads before it does anything (issue 44): `podium --help`, `podium list`, `podium show` and an
argument error import no numpy, pyarrow, pandas or grader; declarations are parsed once and kept by their stat.
The budget is held by the modules imported, never by a timing."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: What none of these commands may import: the numeric stack, the grader, the sandbox, the model clients.
HEAVY = ("numpy", "pyarrow", "pandas", "scipy", "sklearn", "podium.grading", "podium.sandbox", "podium.run",
         "podium.environments.builder", "podium.agents.llm", "podium.services", "http.client", "ssl")  # fmt: skip


def _modules(*args: str, cache: Path) -> set[str]:
    probe = (
        "import io, json, sys, contextlib\n"
        "from podium.cli.entry import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main({list(args)!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    "args",
    [("--help",), ("list",), ("list", "--split", "lite"), ("show", "spaceship-titanic"), ("run", "--seedz", "2"),
     ("run", "--help")],
    ids=["help", "list", "list-lite", "show", "a-bad-flag", "run-help"],
)  # fmt: skip
def test_a_command_that_grades_nothing_imports_no_heavy_module(args: tuple[str, ...], tmp_path: Path) -> None:
    for _ in range(2):  # the first fills the declarations' cache, the second reads it: neither loads the stack
        loaded = _modules(*args, cache=tmp_path)
        assert [m for m in HEAVY if m in loaded] == [], f"podium {' '.join(args)} imports them"
    if args[0] in ("list", "show"):
        assert (tmp_path / "podium" / "yaml-1.json").is_file()  # what they parsed is kept


def test_list_reads_the_kept_declarations_without_yaml(tmp_path: Path) -> None:
    _modules("list", cache=tmp_path)
    assert "yaml" not in _modules("list", cache=tmp_path)  # every declaration came from the cache


def test_the_cache_gives_back_what_yaml_gave_and_rereads_an_edited_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from podium import yaml_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(yaml_cache, "_memory", None)
    path = tmp_path / "c.yaml"
    path.write_text("id: x\ndeadline: 2021-11-03\nversions: {2: {same_data: true}}\nvalues: [1, 2.5, null, yes]\n")
    parsed: list[str] = []

    def parse(text: str) -> object:
        parsed.append(text)
        return yaml.safe_load(text)

    first = yaml_cache.load_yaml(path, parse)
    assert first == {"id": "x", "deadline": datetime.date(2021, 11, 3), "versions": {2: {"same_data": True}},
                     "values": [1, 2.5, None, True]}  # fmt: skip
    yaml_cache._write()
    monkeypatch.setattr(yaml_cache, "_memory", None)  # a new process: read back from the file
    assert yaml_cache.load_yaml(path, parse) == first and len(parsed) == 1
    path.write_text("id: y\n")  # an edit: its size and time change
    assert yaml_cache.load_yaml(path, parse) == {"id": "y"} and len(parsed) == 2


def test_a_broken_cache_costs_only_the_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from podium import yaml_cache

    cache = tmp_path / "cache" / "podium" / "yaml-1.json"
    cache.parent.mkdir(parents=True)
    path = tmp_path / "c.yaml"
    path.write_text("id: x\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for broken in ("{not json", '{"x": 1}', json.dumps({str(path): {"stamp": "no", "json": {}}}), "[]"):
        cache.write_text(broken)
        monkeypatch.setattr(yaml_cache, "_memory", None)
        assert yaml_cache.load_yaml(path, yaml.safe_load) == {"id": "x"}
    monkeypatch.setattr(yaml_cache, "_memory", None)
    entry = {str(path): {"stamp": yaml_cache._stamp(path), "json": {"__pairs__": [[[1], 2]]}}}
    cache.write_text(json.dumps(entry))  # a key JSON cannot give back: parsed again
    assert yaml_cache.load_yaml(path, yaml.safe_load) == {"id": "x"}

"""docs/contamination.md's recipe, command for command, on one practice competition: the data with either
description (the second prepare from the first's kept raw files), familiarity from a stand-in model
server, the baseline agent on both, and the report that pairs them beside familiarity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from podium import registry
from test_familiarity import serve_logprobs

COMP = "practice-titanic"


def _podium(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "podium", *args],
        cwd=cwd, capture_output=True, text=True, timeout=900, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, f"podium {' '.join(args)}: {result.stderr[-3000:]}"
    return result.stdout


def test_the_recipe_pairs_both_descriptions_beside_familiarity(tmp_path: Path) -> None:
    _podium(tmp_path, "prepare", "-c", COMP, "--keep-raw", "--data-dir", "data/original")
    _podium(tmp_path, "prepare", "-c", COMP, "--obfuscated", "--from", "data/original", "--data-dir", "data/obfuscated")
    given = (tmp_path / "data/obfuscated" / COMP / "prepared/public/description.md").read_text(encoding="utf-8")
    assert given == (registry.get(COMP).folder / "description_obfuscated.md").read_text(encoding="utf-8")
    assert (tmp_path / "data/original" / COMP / "raw").is_dir(), "the source's raw files stay"
    (tmp_path / "kaggle-texts" / COMP).mkdir(parents=True)  # the texts the model may have read
    (tmp_path / "kaggle-texts" / COMP / "overview.md").write_text("Predict who survived the Titanic.\n")
    with serve_logprobs() as (url, _):
        _podium(tmp_path, "familiarity", "--base-url", url, "--model", "m", "-c", COMP, "--output", "familiarity.json",
                "--cache-dir", "cache", "--documents", "kaggle-texts")  # fmt: skip
    for variant in ("original", "obfuscated"):
        _podium(tmp_path, "run", "--agent", "baseline", "--competitions", COMP, "--seeds", "1", "--time-limit", "5m",
                "--data-dir", f"data/{variant}", "--run-group", f"baseline-{variant}")  # fmt: skip
    out = _podium(
        tmp_path, "report", "runs/baseline-original", "runs/baseline-obfuscated", "--by", "description",
        "--compare", "original,obfuscated", "--familiarity", "familiarity.json", "--pad-missing", "--format", "json",
    )  # fmt: skip
    report = json.loads(out)
    assert list(report["labels"]) == ["original", "obfuscated"]
    (comparison,) = report["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["competitions"]) == ("original", "obfuscated", 1)
    section = report["familiarity"]
    assert [row["competition_id"] for row in section["labels"]["original"]["competitions"]] == [COMP]
    (difference,) = section["differences"]
    assert (difference["a"], difference["b"]) == ("original", "obfuscated")
    assert difference["competitions"][0]["competition_id"] == COMP

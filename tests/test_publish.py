"""Publishing real runs: `podium export mlebench` against the published aggregation's rules, and
`podium bundle create/verify` on a second data folder, tampered with, and fed hostile archives.

The runs are real: the practice suite's `baseline` and `dummy` agents, two seeds each, under bwrap.
The published aggregation (openai/mle-bench, experiments/aggregate_grading_reports.py) is restated
below in this file's own words and run over the exported folder as the script would be run on the
repository with ``--experiment-id``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from podium import registry
from podium.audit import known_leakage
from podium.grading import grade
from podium.paths import CompetitionPaths

COMPETITIONS = ("practice-breast-cancer", "practice-wine")
KEYS = (
    "total_competitions", "submission_exists_percentage", "valid_submissions_percentage", "above_median_percentage",
    "gold_medal_percentage", "silver_medal_percentage", "bronze_medal_percentage", "any_medal_percentage",
)  # fmt: skip


def podium(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=900, env=environment
    )


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two agents, two seeds each, on two practice competitions; audited; and a second data folder."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap): the runs need it")
    root = tmp_path_factory.mktemp("publish")
    for data in ("data", "data2"):
        result = podium("prepare", "-c", COMPETITIONS[0], "-c", COMPETITIONS[1], "--data-dir", str(root / data))
        assert result.returncode == 0, result.stderr[-3000:]
    result = podium(
        "run", "--agent", "baseline", "--agent", "dummy", "--competitions", ",".join(COMPETITIONS), "--seeds", "2",
        "--time-limit", "5m", "--data-dir", str(root / "data"), "--runs-dir", str(root / "runs"), "--run-group", "pg",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    result = podium(
        "audit",
        str(root / "runs"),
        "--data-dir",
        str(root / "data"),
        "--checks",
        "submission,answers,external,oracle,integrity",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    split = root / "two.txt"
    split.write_text("\n".join(COMPETITIONS) + "\n")
    return {"root": root, "runs": root / "runs", "data": root / "data", "data2": root / "data2", "split": split}


def groups(practice: dict[str, Path]) -> list[str]:
    return [str(practice["runs"] / "pg-baseline"), str(practice["runs"] / "pg-dummy")]


# --------------------------------------------------------------------------------------------------
# The published aggregation, restated: experiments/aggregate_grading_reports.py run with
# --experiment-id ID --split FILE [--pad-missing] on a checkout whose root is ``project``.


def published_aggregation(project: Path, experiment_id: str, split: Path, pad_missing: bool) -> dict[str, Any]:
    # the experiment's run groups: the CSV's rows for the id (its header line skipped), in sorted order
    rows = (project / "runs" / "run_group_experiments.csv").read_text().splitlines()
    run_groups = sorted(
        group.strip()
        for line in rows
        if line.strip() and not line.startswith("experiment_id")
        for experiment, group in [line.strip().split(",", 1)]
        if experiment.strip() == experiment_id
    )
    # each run group holds exactly one *grading_report*.json; the paths are read in sorted order
    reports = []
    for group in run_groups:
        found = sorted(p for p in (project / "runs" / group).glob("*grading_report*.json") if p.is_file())
        assert len(found) == 1, found
        reports.append(found[0])
    flags = ("gold_medal", "silver_medal", "bronze_medal", "above_median", "submission_exists", "valid_submission")
    by_competition: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for path in sorted(str(p) for p in reports):
        for entry in sorted(
            json.loads(Path(path).read_text())["competition_reports"], key=lambda e: str(e["competition_id"])
        ):
            by_competition[str(entry["competition_id"])].append({f: bool(entry[f]) for f in flags})
    ids = [line.strip() for line in split.read_text().splitlines() if line.strip()]
    counts = [len(by_competition[c]) for c in ids]
    assert pad_missing or all(counts), "a competition of the split has no report"
    seeds = max(counts) if pad_missing else min(counts)
    failing = dict.fromkeys(flags, False)
    per_seed = []
    for i in range(seeds):
        seed = [by_competition[c][i] if i < len(by_competition[c]) else failing for c in ids]
        n = len(seed)

        def share(test: Any, seed: list[dict[str, bool]] = seed, n: int = n) -> float:
            return sum(1 for s in seed if test(s)) / n * 100

        per_seed.append(
            {
                "total_competitions": float(n),  # every number of a seed's metrics is averaged, this count too
                "submission_exists_percentage": share(lambda s: s["submission_exists"]),
                "valid_submissions_percentage": share(lambda s: s["valid_submission"]),
                "above_median_percentage": share(lambda s: s["above_median"]),
                "gold_medal_percentage": share(lambda s: s["gold_medal"]),
                "silver_medal_percentage": share(lambda s: s["silver_medal"]),
                "bronze_medal_percentage": share(lambda s: s["bronze_medal"]),
                "any_medal_percentage": share(lambda s: s["gold_medal"] or s["silver_medal"] or s["bronze_medal"]),
            }
        )
    out = {}
    for key in KEYS:  # the mean (numpy's) and the standard error (scipy's, ddof 1; 0.0 for one seed) over seeds
        values = [p[key] for p in per_seed]
        mean = float(np.mean(values))
        sem = float(stats.sem(values, ddof=1)) if len(values) > 1 else 0.0
        out[key] = {"mean": mean, "ci_lower": mean - 1.96 * sem, "ci_upper": mean + 1.96 * sem, "standard_error": sem}
    return {"num_seeds_averaged": len(per_seed), "num_competitions_per_seed": len(ids), "metrics": out}


def podium_row(group_paths: list[str], split: Path, pad_missing: bool) -> dict[str, dict[str, Any]]:
    """`podium report`'s published cell of each agent over ``split``."""
    from podium.report import build_report, load_inputs

    report = build_report(load_inputs(group_paths, by=("agent",)), split=str(split), pad_missing=pad_missing)
    return {label: data["splits"][split.stem]["published"] for label, data in report["labels"].items()}


def test_the_export_gives_the_published_aggregation_and_podiums_row(practice: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "export"
    result = podium("export", "mlebench", *groups(practice), "--out", str(out), "--split", str(practice["split"]))
    assert result.returncode == 0, result.stderr[-3000:]
    document = json.loads((out / "podium-export.json").read_text())
    row = podium_row(groups(practice), practice["split"], pad_missing=False)
    assert set(document["agents"]) == {"baseline", "dummy"}
    for agent, data in document["agents"].items():
        assert len(data["run_groups"]) == 2 and data["run_groups"] == sorted(data["run_groups"])
        assert all(g.endswith(f"-UTC_run-group_{agent}") for g in data["run_groups"])
        exported = data["published"]["two"]
        restated = published_aggregation(out, data["experiment_id"], practice["split"], pad_missing=False)
        assert exported == restated  # exactly, float for float
        assert {k: v for k, v in row[agent].items()} == exported
        assert exported["num_seeds_averaged"] == 2
    baseline = document["agents"]["baseline"]["published"]["two"]["metrics"]
    assert baseline["valid_submissions_percentage"]["mean"] == 100.0 and baseline["any_medal_percentage"]["mean"] > 0
    assert document["agents"]["dummy"]["published"]["two"]["metrics"]["any_medal_percentage"]["mean"] == 0.0
    # each folder: one grading report in the published schema, seed i holding each competition's i-th run
    folder = out / "runs" / document["agents"]["baseline"]["run_groups"][1]
    (report,) = folder.glob("*_grading_report.json")
    data = json.loads(report.read_text())
    assert set(data) == {"total_runs", "total_runs_with_submissions", "total_valid_submissions", "total_medals",
                         "total_gold_medals", "total_silver_medals", "total_bronze_medals", "total_above_median",
                         "competition_reports"}  # fmt: skip
    assert data["total_runs"] == 2 and data["total_medals"] == sum(e["any_medal"] for e in data["competition_reports"])
    for entry in data["competition_reports"]:
        assert list(entry) == ["competition_id", "score", "gold_threshold", "silver_threshold", "bronze_threshold",
                               "median_threshold", "any_medal", "gold_medal", "silver_medal", "bronze_medal",
                               "above_median", "submission_exists", "valid_submission", "is_lower_better",
                               "created_at", "submission_path"]  # fmt: skip
        assert entry["submission_path"] == f"pg-baseline/{entry['competition_id']}/1/submission/submission.csv"
        record = json.loads(
            (practice["runs"] / "pg-baseline" / entry["competition_id"] / "1" / "record.json").read_text()
        )
        assert entry["score"] == record["grade"]["score"]
    csv = (out / "runs" / "run_group_experiments.csv").read_text().splitlines()
    assert csv[0] == "experiment_id,run_group" and len(csv) == 5
    assert (out / ".gitattributes").read_text().splitlines() == [
        "runs/**/*.json filter=lfs diff=lfs merge=lfs -text",
        "runs/**/*.jsonl filter=lfs diff=lfs merge=lfs -text",
    ]
    leaderboard = (out / "LEADERBOARD.md").read_text()
    assert "| baseline | none (no model calls) | - | - | - | - | 0.08 |" in leaderboard
    medal = baseline["any_medal_percentage"]
    assert (
        f"two (not a leaderboard column): {medal['mean']:.2f} ± {medal['standard_error']:.2f} over 2 seed(s)"
        in leaderboard
    )
    assert "| podium-baseline | baseline, 0.08 hours, 2 CPUs, 4 GiB, no GPU" in leaderboard
    assert "no compute record" not in leaderboard  # every run's record says what it had
    submission = (out / "SUBMISSION.md").read_text()
    assert "- [x] The scaffold/harness used in this leaderboard submission does not expose" in submission
    assert "private answers never mounted: 4 of 4 runs" in submission


def test_missing_runs_padded_or_complete_seeds_match_the_published_rules(
    practice: dict[str, Path], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(practice["runs"] / "pg-baseline", runs / "pg-baseline")
    shutil.rmtree(runs / "pg-baseline" / "practice-wine" / "1")  # seed 1 of practice-wine never finished
    for pad in (True, False):
        out = tmp_path / f"export-{pad}"
        flags = ["--pad-missing"] if pad else []
        result = podium("export", "mlebench", str(runs / "pg-baseline"), "--out", str(out), "--split", str(practice["split"]),
                        "--experiment-id", "mine", *flags)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        document = json.loads((out / "podium-export.json").read_text())
        exported = document["agents"]["baseline"]["published"]["two"]
        assert exported == published_aggregation(out, "mine", practice["split"], pad_missing=pad)
        assert exported == podium_row([str(runs / "pg-baseline")], practice["split"], pad_missing=pad)["baseline"]
        medal = exported["metrics"]["any_medal_percentage"]
        if pad:  # seed 1 lacks practice-wine: padded with a failure
            assert exported["num_seeds_averaged"] == 2
            assert exported["metrics"]["submission_exists_percentage"]["standard_error"] == 25.0  # 100% and 50%
            assert "[^pad]: Computed with `--pad-missing`" in (out / "LEADERBOARD.md").read_text()
        else:
            assert exported["num_seeds_averaged"] == 1 and medal["standard_error"] == 0.0


def test_a_run_graded_at_a_later_version_is_exported_at_version_1(tmp_path: Path) -> None:
    from podium.data.prepare import prepare_competition
    from podium.fixtures import make_raw

    cid = "new-york-city-taxi-fare-prediction"  # version 2 corrects only the metric's pairing: same data
    data = tmp_path / "data"
    prepare_competition(registry.get(cid), data, source=make_raw(registry.get(cid), tmp_path / "raw"))
    result = podium("run", "--agent", "dummy", "--competitions", cid, "--latest", "--time-limit", "5m",
                    "--data-dir", str(data), "--runs-dir", str(tmp_path / "runs"), "--run-group", "v2")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "v2" / cid / "0"
    record = json.loads((run / "record.json").read_text())
    assert record["competition_version"] == 2
    record["grade"]["score"] = 999.0  # what version 2 said must not be what is published
    (run / "record.json").write_text(json.dumps(record))
    out = tmp_path / "export"
    result = podium("export", "mlebench", str(tmp_path / "runs" / "v2"), "--out", str(out), "--data-dir", str(data))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "grading it at version 1" in result.stderr
    (report,) = out.glob("runs/*/*_grading_report.json")
    (entry,) = json.loads(report.read_text())["competition_reports"]
    published = grade(registry.get(cid, 1), run / "submission" / "submission.csv", data)
    assert entry["score"] == published.score != 999.0
    assert entry["gold_threshold"] == published.gold_threshold
    assert json.loads((out / "podium-export.json").read_text())["agents"]["dummy"]["regraded"] == [f"v2/{cid}/0"]


def test_export_refuses_what_it_cannot_publish(practice: dict[str, Path], tmp_path: Path) -> None:
    result = podium("export", "mlebench", "no-such-group", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "no such folder" in result.stderr and len(result.stderr.splitlines()) == 1
    result = podium("export", "mlebench", *groups(practice), "--out", str(tmp_path / "x"), "--experiment-id", "a,b")
    assert result.returncode == 2 and "--experiment-id 'a,b'" in result.stderr and not (tmp_path / "x").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    result = podium("export", "mlebench", *groups(practice), "--out", str(other))
    assert result.returncode == 2 and "not a podium export" in result.stderr
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]  # nothing half-written
    # a run graded at a version whose data differs from the published one's has no published grade
    runs = tmp_path / "runs"
    shutil.copytree(practice["runs"] / "pg-dummy", runs / "pg-dummy")
    path = runs / "pg-dummy" / "practice-wine" / "0" / "record.json"
    record = json.loads(path.read_text())
    record |= {"competition_id": "random-acts-of-pizza", "competition_version": 2}
    shutil.move(str(path.parent.parent), str(runs / "pg-dummy" / "random-acts-of-pizza"))
    (runs / "pg-dummy" / "random-acts-of-pizza" / "0" / "record.json").write_text(json.dumps(record))
    out = tmp_path / "export"
    result = podium("export", "mlebench", str(runs / "pg-dummy"), "--out", str(out))
    assert result.returncode == 2 and "whose data differs from the published version's" in result.stderr
    assert not out.exists() and not list(tmp_path.glob(".export.tmp-*"))


def test_a_second_export_replaces_the_first(practice: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "export"
    for split in ("practice", str(practice["split"])):
        result = podium("export", "mlebench", str(practice["runs"] / "pg-dummy"), "--out", str(out), "--split", split)
        assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (out / "experiments" / "splits").iterdir()) == ["two.txt"]
    assert len(list((out / "runs").glob("*_run-group_dummy"))) == 2


def test_the_hardware_line_says_what_the_records_back() -> None:
    from podium.publish.texts import hardware_words

    measured = {
        "compute": {"cpu_model": "AMD EPYC 7763", "cpus": 36.0, "memory_bytes": 440 << 30, "gpu_model": "NVIDIA A10",
                    "gpu_count": 1, "gpu_memory_bytes": 24 << 30, "host": "n1", "used": {"cpu_seconds": 10.0}},
        "limits": {"cpus": 36.0, "memory_bytes": 440 << 30, "gpus": 1},
    }  # fmt: skip
    capped = {"limits": {"cpus": 2.0, "memory_bytes": 4 << 30, "gpus": 0}}
    one = "36 CPUs, 440 GiB, 1 x NVIDIA A10 (24 GiB), CPU AMD EPYC 7763"
    assert hardware_words([measured, measured]) == (one, [])
    text, notes = hardware_words([measured, capped, capped])
    assert text == f"2 CPUs, 4 GiB, no GPU (2 runs); {one} (1 runs)"
    assert notes and notes[0].startswith("2 of 3 runs carry no compute record")


def test_known_leakage_is_read_for_every_competition() -> None:
    """Every competition's notes are text (two YAML notes with ': ' in them were read as mappings)."""
    for cid in registry.ids():
        assert all(isinstance(note, str) for note in registry.get(cid, 1).notes), cid
        known_leakage(cid, 1)
    assert known_leakage("random-acts-of-pizza", 1)


# --------------------------------------------------------------------------------------------------
# Bundles


@pytest.fixture(scope="module")
def bundle(practice: dict[str, Path]) -> Path:
    path = practice["root"] / "bundle.tar.gz"
    result = podium("bundle", "create", *groups(practice), "-o", str(path), "--data-dir", str(practice["data"]))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "manifest sha256" in result.stdout and "[8/8]" in result.stderr  # progress, run by run
    return path


def read_bundle(path: Path) -> dict[str, bytes]:
    """Every file of a bundle (read with podium's own reader), by name."""
    from podium.publish.tarstream import members

    with open(path, "rb") as stream:
        return {m.name: b"".join(m.chunks()) for m in members(stream, 1 << 30) if m.kind == "file"}


def prepared_hashes(data: Path) -> dict[str, str]:
    return {
        value: f"{cid}/{name}"
        for cid in COMPETITIONS
        for name, value in (CompetitionPaths(data, cid).record() or {})["checksums"].items()
    }


def test_the_bundle_verifies_on_a_second_data_folder(practice: dict[str, Path], bundle: Path, tmp_path: Path) -> None:
    files = read_bundle(bundle)
    manifest = json.loads(files["podium-bundle/manifest.json"])
    assert len(manifest["runs"]) == 8 and set(manifest["data"]) == set(COMPETITIONS)
    for run in manifest["runs"]:
        for name in (
            "record.json",
            "submission/submission.csv",
            "code/main.py" if run["agent"] == "baseline" else "logs/agent.stdout.log",
            "audit.json",
        ):
            assert f"podium-bundle/{run['path']}/{name}" in files, (run["path"], name)
        assert run["agent_hash"] and not run["transcript"] and run["audit"]
        assert run["agent_bundled"] == f"agents/{run['agent_hash']}"
        assert f"podium-bundle/agents/{run['agent_hash']}/agent.yaml" in files
        assert f"podium-bundle/{run['page']}" in files
    # never the private answers nor other prepared data: only the dummy's submission is the sample submission
    prepared = prepared_hashes(practice["data"])
    copies = {
        name: prepared[hashlib.sha256(data).hexdigest()]
        for name, data in files.items()
        if hashlib.sha256(data).hexdigest() in prepared
    }
    assert all("/pg-dummy/" in name and name.endswith("/submission/submission.csv") for name in copies), copies
    assert all("/private/" not in where for where in copies.values())
    assert manifest["data"]["practice-wine"]["checksums_sha256"]  # the prepared data is named, never carried
    # the same runs give the same bytes
    again = practice["root"] / "again.tar.gz"
    result = podium("bundle", "create", *groups(practice), "-o", str(again), "--data-dir", str(practice["data"]))
    assert result.returncode == 0 and again.read_bytes() == bundle.read_bytes()
    result = podium("bundle", "verify", str(bundle), "--data-dir", str(practice["data2"]), "--work-dir", str(tmp_path))
    # everything checks out on the second data folder, but for the dummy: it copies the sample submission whatever
    # its seed, so its second seed is its first byte for byte, which a report would count as one more seed
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    # (every file alike but the record, or only the submission where a log's timing differs: either is said so)
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"pg-dummy/{cid}/1" for cid in COMPETITIONS], lines
    for cid, line in zip(COMPETITIONS, lines, strict=True):
        assert f"seed 0 (pg-dummy/{cid}/0)" in line and line.endswith("a deterministic agent that ignores its seed")
    assert "2 difference(s) in 8 runs" in result.stderr
    assert list(tmp_path.iterdir()) == []  # the unpacked bundle is gone


def rewrite(source: Path, target: Path, edit: Any, extra: list[tuple[tarfile.TarInfo, bytes | None]] = ()) -> None:
    """A copy of a bundle made the way someone tampering with it would: ``edit(name, data)`` -> new data, or None
    to leave the member out."""
    with tarfile.open(source, "r:gz") as before, tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as after:
        for member in before:
            data = before.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            changed = edit(member.name, data) if data is not None else b""
            if changed is None:
                continue
            if data is not None:
                member.size = len(changed)
            after.addfile(member, io.BytesIO(changed) if data is not None else None)
        for member, data in extra:
            after.addfile(member, io.BytesIO(data) if data is not None else None)


def test_each_tampering_is_caught_one_line_each(practice: dict[str, Path], bundle: Path, tmp_path: Path) -> None:
    from podium.agents import BUILTIN, folder_digest

    base = "podium-bundle/runs/pg-baseline"
    baseline = folder_digest(BUILTIN / "baseline")

    def edit(name: str, data: bytes) -> bytes | None:
        if name == f"{base}/practice-wine/0/submission/submission.csv":  # a changed submission
            header, *rows = data.decode().splitlines()
            width = len(header.split(",")) - 1
            rows = [",".join([row.split(",")[0], *[repr(1 / width)] * width]) for row in rows]  # all classes alike
            return ("\n".join([header, *rows]) + "\n").encode()
        if name == f"{base}/practice-breast-cancer/1/record.json":  # a record whose score was edited
            record = json.loads(data)
            record["grade"]["score"] = 0.5
            return json.dumps(record, indent=2).encode()
        if name == f"{base}/practice-wine/1/code/main.py":  # a removed file
            return None
        if name == f"podium-bundle/agents/{baseline}/main.py":  # the agent's own code changed
            return data + b"\nimport podium.grading\n"
        return data

    extra = tarfile.TarInfo(f"{base}/practice-breast-cancer/0/code/later.py")  # an extra file
    extra.size = 9
    tampered = tmp_path / "tampered.tar.gz"
    rewrite(bundle, tampered, edit, [(extra, b"print(1)\n")])
    result = podium("bundle", "verify", str(tampered), "--data-dir", str(practice["data2"]))
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    files = [line for line in lines if line.startswith(("changed", "removed", "extra"))]
    assert len(files) == 5, lines
    assert files[0].startswith(f"changed: agents/{baseline}/main.py (sha256")
    assert files[1].startswith("changed: runs/pg-baseline/practice-breast-cancer/1/record.json (sha256")
    assert files[2].startswith("changed: runs/pg-baseline/practice-wine/0/submission/submission.csv (sha256")
    assert files[3] == "removed: runs/pg-baseline/practice-wine/1/code/main.py (in the manifest, not in the bundle)"
    assert (
        files[4]
        == "extra: runs/pg-baseline/practice-breast-cancer/0/code/later.py (in the bundle, not in the manifest)"
    )
    rest = lines[5:]
    # what the changed submission and the edited record must show, worked out here from the runs' own files
    runs = practice["runs"] / "pg-baseline"
    kept = json.loads((runs / "practice-breast-cancer" / "1" / "record.json").read_text())["grade"]
    assert (
        f"pg-baseline/practice-breast-cancer/1: grade score 0.5 in the record, {json.dumps(kept['score'])} graded again"
        in rest
    )
    changed = tmp_path / "changed.csv"
    changed.write_bytes(
        edit(
            f"{base}/practice-wine/0/submission/submission.csv",
            (runs / "practice-wine" / "0" / "submission" / "submission.csv").read_bytes(),
        )
        or b""
    )
    regraded = grade(registry.get("practice-wine"), changed, practice["data2"]).to_dict()
    recorded = json.loads((runs / "practice-wine" / "0" / "record.json").read_text())["grade"]
    # every field of the grade is compared; only when it was graded and where the submission lay may differ
    expected = sorted(k for k in recorded.keys() | regraded.keys() if recorded.get(k) != regraded.get(k))
    expected = [k for k in expected if k not in ("created_at", "submission_path")]
    assert "score" in expected and "percentile" in expected
    wine = [line.removeprefix("pg-baseline/practice-wine/0: ") for line in rest if "practice-wine/0:" in line]
    assert [line.split()[1] for line in wine[:-1]] == expected, wine
    assert all(line.startswith("grade ") and line.endswith(" graded again") for line in wine[:-1])
    assert wine[-1] == "audit integrity clean in audit.json, unclear run again", wine
    # the agent folder no longer hashes to the records' agent_hash: integrity is no longer backed, run by run
    integrity = [line for line in rest if "audit integrity clean in audit.json, unclear run again" in line]
    assert sorted(line.split(":")[0] for line in integrity) == [
        f"pg-baseline/{cid}/{seed}" for cid in COMPETITIONS for seed in (0, 1)
    ]
    dummy = [line for line in rest if line.startswith("pg-dummy/") and "agent that ignores its seed" in line]
    assert len(dummy) == 2  # the dummy's seeds, alike (test_the_bundle_verifies_on_a_second_data_folder)
    assert len(rest) == 1 + len(expected) + 4 + len(dummy), rest  # one line per difference, nothing else
    assert len(lines) == len(set(lines)) and "difference(s)" in result.stderr


def hostile(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tar:
        for member, data in members:
            if data is not None:
                member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    return path


def kind(name: str, type_: bytes, link: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname = type_, link
    return member


def test_a_hostile_archive_stays_in_its_folder(tmp_path: Path) -> None:
    from podium.publish.verify import verify_bundle

    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "outside.txt"
    bad = hostile(tmp_path / "bad.tar.gz", [
        (kind("podium-bundle/link", tarfile.SYMTYPE, str(target)), None),
        (kind("podium-bundle/link/x.txt", tarfile.REGTYPE), b"through the link"),
        (kind("podium-bundle/hard", tarfile.LNKTYPE, "/etc/passwd"), None),
        (kind("podium-bundle/dev", tarfile.CHRTYPE), None),
        (kind("podium-bundle/fifo", tarfile.FIFOTYPE), None),
        (kind("podium-bundle/../../outside.txt", tarfile.REGTYPE), b"escape"),
        (kind(str(target), tarfile.REGTYPE), b"absolute"),
        (kind("podium-bundle/" + "d/" * 40 + "deep.txt", tarfile.REGTYPE), b"deep"),
        (kind("podium-bundle/a\x1b[31mred", tarfile.REGTYPE), b"escape codes"),
        (kind("podium-bundle/" + "n" * 300, tarfile.REGTYPE), b"a GNU long name"),
    ])  # fmt: skip
    differences, _ = verify_bundle(bad, data_dir=tmp_path, work_dir=work)
    text = "\n".join(differences)
    assert "refused member podium-bundle/link: a symbolic link" in text
    assert "a hard link" in text and "a character device" in text and "a FIFO" in text and "GNU long name" in text
    assert text.count("an empty, '.' or '..' part, or too deep") == 2 and "an absolute name" in text
    assert "\x1b" not in text and "a backslash or control character" in text
    assert "no manifest.json in the bundle" in text
    assert not target.exists() and list(work.iterdir()) == []


def test_caps_stop_a_bomb_and_a_corrupt_archive(tmp_path: Path) -> None:
    from podium.publish.tarstream import ArchiveError
    from podium.publish.verify import verify_bundle

    bomb = hostile(tmp_path / "bomb.tar.gz", [(kind("podium-bundle/zeros", tarfile.REGTYPE), bytes(8 << 20))])
    assert bomb.stat().st_size < 100_000
    with pytest.raises(ArchiveError, match="more than 1048576 bytes"):
        verify_bundle(bomb, data_dir=tmp_path, max_size=1 << 20, work_dir=tmp_path)
    result = podium("bundle", "verify", str(bomb), "--max-size", "1M", "--work-dir", str(tmp_path))
    assert result.returncode == 1 and "not verified: " in result.stderr and "more than 1048576 bytes" in result.stderr
    forged = bytearray(gzip.decompress(bomb.read_bytes()))
    forged[0] ^= 1  # the header's checksum no longer holds
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(gzip.compress(bytes(forged)))
    with pytest.raises(ArchiveError, match="checksum"):
        verify_bundle(corrupt, data_dir=tmp_path, work_dir=tmp_path)
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(gzip.compress(gzip.decompress(bomb.read_bytes())[:4096]))
    with pytest.raises(ArchiveError, match="the archive ends early"):
        verify_bundle(truncated, data_dir=tmp_path, work_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.tar.gz", "corrupt.tar.gz", "truncated.tar.gz"]


def copy_group(practice: dict[str, Path], tmp_path: Path, agent: str = "baseline") -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(practice["runs"] / f"pg-{agent}", runs / f"pg-{agent}")
    return runs / f"pg-{agent}"


def test_a_key_is_never_bundled(practice: dict[str, Path], tmp_path: Path) -> None:
    group = copy_group(practice, tmp_path)
    log = group / "practice-wine" / "1" / "logs" / "agent.stdout.log"
    out = tmp_path / "b.tar.gz"
    for planted, env in (
        ("OPENAI_API_KEY=sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e", {}),
        ("connecting with plainvalue-31337-zz", {"MY_SERVICE_TOKEN": "plainvalue-31337-zz"}),
    ):
        log.write_text(f"epoch 1\n{planted}\n")
        result = podium("bundle", "create", str(group), "-o", str(out), "--data-dir", str(practice["data"]), env=env)
        assert result.returncode == 2, result.stderr[-3000:]
        assert f"{log}: holds" in result.stderr and "never carries a key" in result.stderr
        assert planted.split("=")[-1].split()[-1] not in result.stderr  # the message never repeats the key
        assert list(tmp_path.glob("*.tar.gz*")) == [] and list(tmp_path.glob(".b.tar.gz*")) == []


def test_copies_of_prepared_data_are_left_out(practice: dict[str, Path], tmp_path: Path) -> None:
    group = copy_group(practice, tmp_path)
    answers = CompetitionPaths(practice["data"], "practice-wine").private / registry.get("practice-wine").answers
    train = CompetitionPaths(practice["data"], "practice-wine").public / "train.csv"
    run = group / "practice-wine" / "0"
    shutil.copy(answers, run / "code" / "stolen.csv")
    shutil.copy(train, run / "logs" / "train_copy.csv")
    os.symlink(answers, run / "code" / "link.csv")
    out = tmp_path / "b.tar.gz"
    result = podium("bundle", "create", str(group), "-o", str(out), "--data-dir", str(practice["data"]))
    assert result.returncode == 0, result.stderr[-3000:]
    files = read_bundle(out)
    place = "podium-bundle/runs/pg-baseline/practice-wine/0"
    assert not {f"{place}/code/stolen.csv", f"{place}/logs/train_copy.csv", f"{place}/code/link.csv"} & set(files)
    manifest = json.loads(files["podium-bundle/manifest.json"])
    (entry,) = [r for r in manifest["runs"] if r["path"] == place.removeprefix("podium-bundle/")]
    reasons = {item["path"]: item["reason"] for item in entry["left_out"]}
    assert reasons["code/stolen.csv"] == "a copy of the prepared data (practice-wine/prepared/private/test.csv)"
    assert reasons["logs/train_copy.csv"] == "a copy of the prepared data (practice-wine/prepared/public/train.csv)"
    assert reasons["code/link.csv"] == "a symbolic link (never followed)"
    assert answers.read_bytes() not in files.values()
    capped = tmp_path / "capped.tar.gz"
    result = podium("bundle", "create", str(group), "-o", str(capped), "--data-dir", str(practice["data"]),
                    "--max-file-size", "2K")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    files = read_bundle(capped)
    (entry,) = [
        r
        for r in json.loads(files["podium-bundle/manifest.json"])["runs"]
        if r["path"] == place.removeprefix("podium-bundle/")
    ]
    reasons = {item["path"]: item["reason"] for item in entry["left_out"]}
    assert reasons["code/main.py"].endswith("bytes, over --max-file-size (2048)")
    size = (run / "submission" / "submission.csv").stat().st_size
    assert size > 2048 and f"{place}/submission/submission.csv" in files  # the submission is never left out


def test_groups_of_different_compute_are_bundled_together(practice: dict[str, Path], tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = podium("run", "--agent", "dummy", "--competitions", "practice-wine", "--cpus", "1", "--memory", "1G",
                    "--time-limit", "5m", "--data-dir", str(practice["data"]), "--runs-dir", str(runs),
                    "--run-group", "small")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = tmp_path / "b.tar.gz"
    both = [str(practice["runs"] / "pg-baseline"), str(runs / "small")]
    result = podium("bundle", "create", *both, "-o", str(out), "--data-dir", str(practice["data"]))
    assert result.returncode == 0, result.stderr[-3000:]
    index = read_bundle(out)["podium-bundle/index.html"].decode()
    assert "1 CPU, 1 GiB, no GPU" in index and "2 CPUs, 4 GiB, no GPU" in index


def test_a_run_page_shows_the_transcript_escaped_and_opens_offline(
    practice: dict[str, Path], tmp_path: Path, page: Any
) -> None:
    group = copy_group(practice, tmp_path)
    run = group / "practice-wine" / "0"
    call = {"call": 1, "time": "2026-01-01T00:00:00+00:00", "api": "chat", "path": "/v1/chat/completions",
            "model": "gpt-test", "status": 200, "stream": False,
            "request": {"messages": [{"role": "user", "content": "<script>alert(1)</script> fit a model"}]},
            "response": {"choices": [{"message": {"content": "use gradient boosting"}}]}, "error": None,
            "truncated": False}  # fmt: skip
    (run / "llm_transcript.jsonl").write_text(json.dumps(call) + "\n")
    out = tmp_path / "b.tar.gz"
    result = podium("bundle", "create", str(group), "-o", str(out), "--data-dir", str(practice["data"]))
    assert result.returncode == 0, result.stderr[-3000:]
    unpacked = tmp_path / "unpacked"
    for name, data in read_bundle(out).items():
        (unpacked / name).parent.mkdir(parents=True, exist_ok=True)
        (unpacked / name).write_bytes(data)
    root = unpacked / "podium-bundle"
    html = (root / "pages" / "pg-baseline" / "practice-wine" / "0.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "use gradient boosting" in html and "gpt-test" in html
    manifest = json.loads((root / "manifest.json").read_text())
    assert [r["transcript"] for r in manifest["runs"] if r["path"].endswith("practice-wine/0")] == [True]
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto((root / "index.html").as_uri())
    links = [
        link
        for link in page.eval_on_selector_all("table.runs a[href]", "links => links.map(a => a.href)")
        if "/pages/" in link
    ]
    assert len(links) == 4 and all(link.endswith(".html") for link in links), links
    page.goto(next(link for link in links if link.endswith("practice-wine/0.html")))
    assert "call 1" in page.inner_text("body") and page.title().startswith("practice-wine seed 0")
    code = page.eval_on_selector_all("a[href$='code/main.py']", "links => links.map(a => a.href)")
    assert code and all(Path(link.removeprefix("file://")).is_file() for link in code)
    assert all(url.startswith(root.as_uri()) for url in requested), requested

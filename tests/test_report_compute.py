"""`podium report` states each label's compute profile (from ``record.compute``) in every table's header, and
refuses to put labels of different profiles in one comparison without ``--mixed-hardware``; records without
compute, and grading reports, are ``unknown``, a profile of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from podium.cli import main
from podium.records import compute_profile

SPLIT = ("spaceship-titanic", "spooky-author-identification")
GIB = 1 << 30


def _compute(cpus: float, memory_gib: int, gpus: int = 0, **used: Any) -> dict[str, Any]:
    return {
        "cpu_model": "AMD EPYC 7763 64-Core Processor", "cpus": cpus, "memory_bytes": memory_gib * GIB,
        "gpu_model": "NVIDIA A10" if gpus else None, "gpu_count": gpus, "gpu_memory_bytes": 24 * GIB if gpus else None,
        "host": "node-1",
        "used": {"cpu_seconds": 3600.0, "peak_memory_bytes": GIB, "gpu_hours": 0.5 if gpus else None,
                 "wall_seconds": 1800.0, **used},
    }  # fmt: skip


def _group(root: Path, name: str, compute: dict[str, Any] | None, *, failed: str | None = None) -> Path:
    """Two seeds of the two competitions, every run with ``compute`` (none for an older podium's records);
    ``failed`` names a competition whose seed 0 the harness failed (no compute, as a failed run has none)."""
    for cid in SPLIT:
        for seed in range(2):
            harness = cid == failed and seed == 0
            medal = cid == SPLIT[0]
            grade = {
                "competition_version": 1,
                "score": 0.5,
                "submission_exists": True,
                "valid_submission": True,
                "above_median": medal,
                "gold_medal": medal,
                "silver_medal": False,
                "bronze_medal": False,
            }
            record: dict[str, Any] = {
                "run_group": name, "competition_id": cid, "competition_version": 1, "seed": seed, "agent": "agent",
                "status": "harness_error" if harness else "finished", "grade": grade,
                "agent_result": None if harness else {"exit_code": 0, "seconds": 1800.0},
            }  # fmt: skip
            if compute is not None and not harness:
                record["compute"] = compute
            folder = root / name / cid / str(seed)
            folder.mkdir(parents=True)
            (folder / "record.json").write_text(json.dumps(record))
    return root / name


@pytest.fixture
def split(tmp_path: Path) -> Path:
    path = tmp_path / "two.txt"
    path.write_text("\n".join(SPLIT) + "\n")
    return path


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_labels_of_different_compute_are_refused_in_one_line_naming_the_profiles_and_the_flag(
    tmp_path: Path, split: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = _group(tmp_path / "runs", "small", _compute(2, 8))
    paper = _group(tmp_path / "runs", "paper", _compute(36, 440, gpus=1))
    code, out, err = _report(capsys, str(small), str(paper), "--split", str(split))
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    for words in ("2 CPUs, 8 GiB, no GPU (agent (small))", "36 CPUs, 440 GiB, 1 x NVIDIA A10 (24 GiB) (agent (paper))",
                  "--mixed-hardware"):  # fmt: skip
        assert words in err, err
    code, out, err = _report(
        capsys, str(small), str(paper), "--split", str(split), "--mixed-hardware", "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["compute"] == {
        "mixed_hardware": True,
        "profiles": {
            "agent (small)": "2 CPUs, 8 GiB, no GPU",
            "agent (paper)": "36 CPUs, 440 GiB, 1 x NVIDIA A10 (24 GiB)",
        },
    }
    block = report["labels"]["agent (paper)"]["compute"]
    assert block["profile"] == compute_profile(_compute(36, 440, gpus=1)) and block["runs_with_compute"] == 4
    assert block["used"] == {"cpu_hours": 4.0, "peak_memory_bytes": GIB, "gpu_hours": 2.0, "wall_hours": 2.0}
    assert report["labels"]["agent (small)"]["compute"]["used"]["gpu_hours"] is None
    for fmt in ("text", "md"):
        code, out, _ = _report(
            capsys, str(small), str(paper), "--split", str(split), "--mixed-hardware", "--format", fmt
        )
        assert code == 0
        head = out.split("Any medal")[0]
        assert "Compute differs (--mixed-hardware):" in head
        assert "agent (small): 2 CPUs, 8 GiB, no GPU" in head
        assert "agent (paper): 36 CPUs, 440 GiB, 1 x NVIDIA A10 (24 GiB)" in head


def test_one_profile_is_stated_once_and_harness_failures_without_compute_do_not_mix_it(
    tmp_path: Path, split: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _group(tmp_path / "runs", "first", _compute(2, 8), failed=SPLIT[1])
    second = _group(tmp_path / "runs", "second", _compute(2, 8, cpu_seconds=60.0))
    code, out, err = _report(capsys, str(first), str(second), "--split", str(split))
    assert code == 0, err
    assert "\nCompute: 2 CPUs, 8 GiB, no GPU (every label)\n" in out
    report = json.loads(_report(capsys, str(first), str(second), "--split", str(split), "--format", "json")[1])
    assert report["labels"]["agent (first)"]["compute"]["profiles"] == {"2 CPUs, 8 GiB, no GPU": 3}
    html = tmp_path / "report.html"
    assert _report(capsys, str(first), str(second), "--split", str(split), "--output", str(html))[0] == 0
    assert '<p class="compute">Compute: 2 CPUs, 8 GiB, no GPU (every label)</p>' in html.read_text()


def test_records_without_compute_are_unknown_a_profile_of_their_own(
    tmp_path: Path, split: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _group(tmp_path / "runs", "old", None)
    new = _group(tmp_path / "runs", "new", _compute(2, 8))
    grading = tmp_path / "grading_report.json"
    rows = [{"competition_id": cid, "submission_exists": True, "valid_submission": True} for cid in SPLIT]
    grading.write_text(json.dumps({"competition_reports": rows}))
    code, _, err = _report(capsys, str(old), str(new), "--split", str(split))
    assert code == 2 and "unknown (agent (old))" in err and "records from before podium recorded compute" in err
    code, out, err = _report(capsys, str(old), str(grading), "--split", str(split))
    assert code == 0, err  # two unknowns: one profile
    assert "Compute: unknown (every label)" in out
    code, _, err = _report(capsys, str(grading), str(new), "--split", str(split))
    assert code == 2 and "unknown (grading_report)" in err


def test_one_label_pooling_runs_of_different_compute_is_refused_too(
    tmp_path: Path, split: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = _group(tmp_path / "runs", "small", _compute(2, 8))
    large = _group(tmp_path / "runs", "large", _compute(8, 32))
    code, _, err = _report(capsys, str(small), str(large), "--label", "pooled", "--split", str(split))
    assert code == 2 and "mixed: 2 CPUs, 8 GiB, no GPU; 8 CPUs, 32 GiB, no GPU (pooled)" in err, err
    code, out, _ = _report(
        capsys, str(small), str(large), "--label", "pooled", "--split", str(split), "--mixed-hardware"
    )
    assert code == 0 and "Compute: mixed: 2 CPUs, 8 GiB, no GPU; 8 CPUs, 32 GiB, no GPU (every label)" in out


def test_the_run_groups_own_report_states_each_agents_compute(tmp_path: Path) -> None:
    from podium.report.group import write_group_report
    from podium.store import RunStore

    root = tmp_path / "runs"
    group = _group(root, "g", _compute(2, 8), failed=SPLIT[1])
    store = RunStore(root)
    for path in sorted(group.glob("*/*/record.json")):
        record = {**json.loads(path.read_text()), "finished_at": "2026-01-01T00:00:00+00:00"}
        path.write_text(json.dumps(record))
        store.add(record, path)
    json_path, md_path, _ = write_group_report(root, "g")
    assert "Compute of agent's runs: 2 CPUs, 8 GiB, no GPU." in md_path.read_text()
    assert json.loads(json_path.read_text())["compute"] == {"agent": "2 CPUs, 8 GiB, no GPU"}

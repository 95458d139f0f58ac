"""A run group's identity (group.json), --redo, and the atomic replacement of a redone run.

Fast: no sandbox runs; the store is filled with records as `podium run` writes them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from podium import registry
from podium.agents import folder_digest, load_agent
from podium.errors import UsageError
from podium.paths import exchange_folders
from podium.run import RunConfig
from podium.run import group as rungroup
from podium.store import RunStore

COMPS = ("practice-titanic", "practice-wine")


def _config(tmp_path: Path, **changes: object) -> RunConfig:
    config = RunConfig(
        agent=load_agent("dummy"),
        seeds=1,
        time_limit=3.0,
        sandbox="bwrap",
        cpus=1.0,
        memory_bytes=1 << 30,
        gpus=0,
        run_group="g",
        data_dir=tmp_path / "data",
        runs_dir=tmp_path / "runs",
        agent_hash="h1",
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def _finish(config: RunConfig, competition_id: str, seed: int = 0, *, valid: bool = True, version: int = 1) -> dict:
    """A finished run as `podium run` lands it: its folder with record.json, then its index row."""
    store = RunStore(config.runs_dir)
    staging = store.stage(config.run_group, competition_id, seed)
    record = {
        "run_group": config.run_group,
        "competition_id": competition_id,
        "competition_version": version,
        "seed": seed,
        "agent": config.agent.name,
        "agent_hash": config.agent_hash,
        "status": "finished",
        "sandbox": config.sandbox,
        "finished_at": "2026-01-01T00:00:00+00:00",
        "limits": {"time_limit_s": config.time_limit, "memory_bytes": config.memory_bytes, "cpus": config.cpus},
        "grade": {"score": 0.5 if valid else None, "valid_submission": valid, "submission_exists": valid},
        "started_at": str(staging),  # a mark of this landing
    }
    store.land(staging, record)
    return record


def _plan(config: RunConfig, redo: rungroup.Redo | None = None) -> rungroup.Plan:
    plan = rungroup.plan(config, [registry.get(c) for c in COMPS], RunStore(config.runs_dir), redo)
    rungroup.write(config.runs_dir / config.run_group, plan.document)
    return plan


def _todo(plan: rungroup.Plan) -> list[tuple[str, int]]:
    return [(c.id, s) for c, s in plan.todo]


def test_first_use_writes_the_settings_and_the_same_settings_skip_finished_runs(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert _todo(_plan(config)) == [(c, 0) for c in COMPS]
    settings = json.loads((tmp_path / "runs" / "g" / "group.json").read_text())["settings"]
    assert settings["time_limit_s"] == 3.0 and settings["agent"] == "dummy" and settings["agent_hash"] == "h1"
    _finish(config, COMPS[0])
    assert _todo(_plan(config)) == [(COMPS[1], 0)]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"time_limit": 36000.0}, "time limit 3s (now 10h)"),
        ({"sandbox": "docker"}, "sandbox bwrap (now docker)"),
        ({"memory_bytes": 16 << 30}, "memory cap 1G (now 16G)"),
        ({"cpus": None}, "CPUs 1 (now not capped)"),
        ({"gpus": 1}, "GPUs 0 (now 1)"),
        ({"disk_bytes": 50 << 30}, "disk cap none (now 50G)"),
        ({"agent_hash": "h2"}, "agent folder (hash of its files) h1 (now h2)"),
    ],
)
def test_other_settings_are_refused_naming_each_difference(tmp_path: Path, change: dict, said: str) -> None:
    config = _config(tmp_path)
    _plan(config)
    _finish(config, COMPS[0])
    with pytest.raises(UsageError) as error:
        _plan(replace(config, **change))  # type: ignore[arg-type]
    assert said in str(error.value) and "--run-group" in str(error.value) and "--redo all" in str(error.value)
    with pytest.raises(UsageError, match="--redo failed keeps the group's finished runs"):
        _plan(replace(config, **change), "failed")  # type: ignore[arg-type]
    assert _todo(_plan(replace(config, run_group="other", **change))) == [(c, 0) for c in COMPS]  # type: ignore[arg-type]


def test_another_competition_version_is_a_difference(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _plan(config)
    _finish(config, COMPS[0], version=2)
    with pytest.raises(UsageError, match=f"{COMPS[0]} version 2 \\(now 1\\)"):
        _plan(config)


def test_another_agent_is_never_redone_into_the_group(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _plan(config)
    _finish(config, COMPS[0])
    with pytest.raises(UsageError, match="another --run-group"):
        _plan(replace(config, agent=load_agent("baseline")), "all")


def test_redo_failed_redoes_only_runs_without_a_valid_submission(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _plan(config)
    _finish(config, COMPS[0], valid=True)
    _finish(config, COMPS[1], valid=False)
    plan = _plan(config, "failed")
    assert _todo(plan) == [(COMPS[1], 0)] and plan.redoing == 1
    assert _todo(_plan(config)) == []


def test_redo_all_with_new_settings_needs_every_run_of_the_group_and_resumes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _plan(config)
    for cid in COMPS:
        _finish(config, cid)
    longer = replace(config, time_limit=60.0)
    with pytest.raises(UsageError, match=f"leaving 1 run\\(s\\) under the old settings: {COMPS[1]} seed 0"):
        rungroup.plan(longer, [registry.get(COMPS[0])], RunStore(config.runs_dir), "all")
    plan = _plan(longer, "all")
    assert _todo(plan) == [(c, 0) for c in COMPS] and plan.redoing == 2
    group = tmp_path / "runs" / "g"
    # the first redone run lands, then the batch is interrupted
    _finish(longer, COMPS[0])
    rungroup.landed(group, (COMPS[0], 0))
    assert json.loads((group / "group.json").read_text())["pending_redo"]["runs"] == [[COMPS[1], 0]]
    # a command without --redo, with the new settings, still redoes the run left under the old ones
    assert _todo(_plan(longer)) == [(COMPS[1], 0)]
    # the old settings are refused now; the same --redo all command resumes
    with pytest.raises(UsageError, match="time limit 1m \\(now 3s\\)"):
        _plan(config)
    resumed = _plan(longer, "all")
    assert _todo(resumed) == [(COMPS[1], 0)] and any("resuming" in note for note in resumed.notes)
    _finish(longer, COMPS[1])
    rungroup.landed(group, (COMPS[1], 0))
    assert "pending_redo" not in json.loads((group / "group.json").read_text())
    assert _todo(_plan(longer)) == []
    assert _todo(_plan(longer, "all")) == [(c, 0) for c in COMPS]  # a new --redo all starts again


def test_a_group_from_before_group_json_is_checked_against_its_records(tmp_path: Path) -> None:
    config = _config(tmp_path)
    _finish(config, COMPS[0])
    assert not (tmp_path / "runs" / "g" / "group.json").exists()
    with pytest.raises(UsageError, match="time limit 3s \\(now 1h\\)"):
        rungroup.plan(replace(config, time_limit=3600.0), [registry.get(COMPS[0])], RunStore(config.runs_dir))
    assert _todo(_plan(config)) == [(COMPS[1], 0)]


def test_a_redone_run_replaces_the_old_folder_and_row(tmp_path: Path) -> None:
    config = _config(tmp_path)
    first = _finish(config, COMPS[0], valid=False)
    second = _finish(config, COMPS[0], valid=True)
    store = RunStore(config.runs_dir)
    (row,) = store.rows("g")
    assert row["valid_submission"] == 1
    final = store.run_dir("g", COMPS[0], 0)
    assert json.loads((final / "record.json").read_text())["started_at"] == second["started_at"] != first["started_at"]
    assert [p.name for p in final.parent.iterdir()] == ["0"]


def test_exchange_swaps_two_folders(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_text("a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("b")
    if not exchange_folders(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this filesystem cannot exchange two paths; podium falls back to two renames")
    assert (tmp_path / "a" / "x").read_text() == "b" and (tmp_path / "b" / "x").read_text() == "a"


def test_reconcile_never_takes_a_staging_folder_for_a_run(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    staging = tmp_path / "g" / "c" / ".0.tmp-999999-1"
    staging.mkdir(parents=True)
    (staging / "record.json").write_text(json.dumps({"run_group": "g", "competition_id": "c", "seed": 0}))
    assert store.reconcile("g") == 0 and store.rows("g") == []


def test_the_agent_hash_ignores_hidden_files_caches_and_a_runs_folder_inside(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.yaml").write_text("command: [python3, main.py]\n")
    (agent / "main.py").write_text("print(1)\n")
    before = folder_digest(agent, skip=[agent / "runs"])
    for path in (agent / ".ready", agent / "__pycache__" / "m.pyc", agent / "runs" / "default" / "x"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert folder_digest(agent, skip=[agent / "runs"]) == before
    (agent / "main.py").write_text("print(2)\n")
    assert folder_digest(agent, skip=[agent / "runs"]) != before


def test_group_json_lists_the_competitions_asked_of_the_group_by_every_command(tmp_path: Path) -> None:
    config = _config(tmp_path)
    group = tmp_path / "runs" / "g" / "group.json"
    rungroup.write(group.parent, rungroup.plan(config, [registry.get(COMPS[1])], RunStore(config.runs_dir)).document)
    assert json.loads(group.read_text())["competitions"] == [COMPS[1]]
    _plan(config)
    assert json.loads(group.read_text())["competitions"] == sorted(COMPS)
    # a group from before the list: what it holds counts as asked, with this command's
    data = json.loads(group.read_text())
    del data["competitions"]
    group.write_text(json.dumps(data))
    _finish(config, "practice-spaceship-titanic")
    rungroup.write(group.parent, rungroup.plan(config, [registry.get(COMPS[0])], RunStore(config.runs_dir)).document)
    assert json.loads(group.read_text())["competitions"] == sorted([COMPS[0], "practice-spaceship-titanic"])


def test_the_report_of_a_group_counts_the_competitions_asked_of_it_not_a_whole_split(tmp_path: Path) -> None:
    """Issue 29 item 4: `podium run --competitions a,b` then `podium report` on the group: reported over a and b
    (2 competitions), not refused over the practice split, nor padded with its 8 others."""
    from podium.report import build_report, load_inputs, render

    config = _config(tmp_path)
    _plan(config)
    for cid in COMPS:
        _finish(config, cid)
    inputs = load_inputs([str(tmp_path / "runs" / "g")])
    assert inputs[0].asked == sorted(COMPS) and inputs[0].notes == []
    report = build_report(inputs)
    assert list(report["splits"]) == ["asked"] and report["splits"]["asked"]["competitions"] == 2
    published = report["labels"]["dummy (g)"]["splits"]["asked"]["published"]
    assert published["num_competitions_per_seed"] == 2
    assert published["metrics"]["valid_submissions_percentage"]["mean"] == 100.0
    assert "== asked of the run group: 2 competitions ==" in render(report, "text")
    # --split still asks for a split's denominator: the practice split's other competitions are missing
    practice = registry.split_ids("practice")
    padded = build_report(inputs, split="practice", pad_missing=True)["labels"]["dummy (g)"]["splits"]["practice"]
    assert padded["published"]["metrics"]["valid_submissions_percentage"]["mean"] == pytest.approx(200 / len(practice))
    # a group from before group.json listed them: the splits, as before, and a note that says so
    data = json.loads((tmp_path / "runs" / "g" / "group.json").read_text())
    del data["competitions"]
    (tmp_path / "runs" / "g" / "group.json").write_text(json.dumps(data))
    (old,) = load_inputs([str(tmp_path / "runs" / "g")])
    assert old.asked is None and "reported against the splits, as before" in old.notes[0]
    assert "asked" not in build_report([old], pad_missing=True)["splits"]

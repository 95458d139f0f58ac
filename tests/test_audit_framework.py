"""The audit's framework: types round-trip through JSON, the runner caches by content hash, writes
``audit.json`` beside the record without touching it, and reads the agent's folders without following links."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from podium.audit import (
    AUDIT_FILE,
    AuditContext,
    CheckResult,
    Evidence,
    Flag,
    RunAudit,
    audit_paths,
    audit_run,
    find_runs,
    read_audit,
    register_check,
)
from podium.audit.registry import _CHECKS
from podium.errors import HarnessError, UsageError


def make_run(root: Path, competition: str = "spaceship-titanic", seed: int = 0, agent: str = "dummy") -> Path:
    run = root / "g" / competition / str(seed)
    for folder in ("submission", "code", "logs", "home"):
        (run / folder).mkdir(parents=True, exist_ok=True)
    record = {"run_group": "g", "competition_id": competition, "competition_version": 1, "seed": seed,
              "agent": agent, "status": "finished", "grade": {"score": 0.5, "valid_submission": True}}  # fmt: skip
    (run / "record.json").write_text(json.dumps(record))
    return run


class Counting:
    """A check that counts its runs and flags a run whose code mentions 'cheat'."""

    name = "counting-test"

    def __init__(self) -> None:
        self.calls = 0

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return None if ctx.record is not None else "no record"

    def cache_key(self, ctx: AuditContext) -> str:
        return "|".join(ctx.read_text(p) for p in ctx.code_files())

    def run(self, ctx: AuditContext) -> CheckResult:
        self.calls += 1
        flags = [
            Flag(self.name, "says cheat", (Evidence(ctx.relative(p), 1, ctx.read_text(p)),))
            for p in ctx.code_files()
            if "cheat" in ctx.read_text(p)
        ]
        return CheckResult.from_flags(self.name, flags, {"podium": "test"})


@pytest.fixture
def counting() -> Counting:
    check = Counting()
    register_check(check)
    yield check
    _CHECKS.pop(check.name, None)


def test_types_round_trip_and_fragments_are_cut() -> None:
    flag = Flag("c", "why", (Evidence("code/a.py", 3, "x" * 1000),), figures={"similarity": 0.90031234567, "rows": 3})
    assert len(flag.evidence[0].fragment) <= 240
    result = CheckResult.from_flags("c", [flag, Flag("c", "a note", violation=False)], {"podium": "1", "calls": 7})
    audit = RunAudit("r", "comp", 2, "flagged", (result,), {"judge": "no model named"}, incomplete=("judge",))
    assert result.verdict == "flagged"
    saved = json.loads(json.dumps(audit.to_json()))
    assert RunAudit.from_json(saved) == audit
    assert saved["flags"][0]["figures"] == {"similarity": 0.90031234567, "rows": 3}  # numbers, at full precision
    assert saved["results"][0]["inputs"]["calls"] == 7 and saved["incomplete"] == ["judge"]
    incomplete = RunAudit("r", "comp", 2, "incomplete", (), incomplete=("plagiarism", "judge"))
    assert incomplete.summary == "incomplete: plagiarism, judge"
    assert RunAudit("r", "comp", 2, "unclear", incomplete=("judge",)).summary == "unclear (incomplete: judge)"
    assert CheckResult.from_flags("c", [Flag("c", "note", violation=False)], {}).verdict == "clean"
    with pytest.raises(ValueError):
        CheckResult("c", "maybe")  # type: ignore[arg-type]


def test_runner_caches_by_content_and_never_touches_the_record(tmp_path: Path, counting: Counting) -> None:
    run = make_run(tmp_path)
    record_before = (run / "record.json").read_bytes()
    (run / "code" / "main.py").write_text("print('fair')\n")
    first = audit_run(run, [counting.name])
    assert first.result(counting.name).verdict == "clean" and counting.calls == 1
    assert first.verdict == "incomplete" and "integrity" in first.incomplete  # the other checks did not run
    assert (run / AUDIT_FILE).is_file() and read_audit(run) == first
    again = audit_run(run, [counting.name])
    assert counting.calls == 1 and again.results == first.results  # cached: the check did not run
    (run / "code" / "main.py").write_text("cheat = True\n")
    flagged = audit_run(run, [counting.name])
    assert counting.calls == 2 and flagged.verdict == "flagged"
    audit_run(run, [counting.name], redo=True)
    assert counting.calls == 3  # --redo: the cached result is not reused
    assert flagged.flags[0].evidence[0].file == "code/main.py"
    assert (run / "record.json").read_bytes() == record_before


def test_links_are_never_followed(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    secret = tmp_path / "secret.py"
    secret.write_text("answers = [1, 2, 3]\n")
    os.symlink(secret, run / "code" / "link.py")
    os.symlink(tmp_path, run / "code" / "loop")
    (run / "code" / "real.py").write_text("x = 1\n")
    ctx = AuditContext(run)
    assert [p.name for p in ctx.code_files()] == ["real.py"]
    assert ctx.read_text(run / "code" / "link.py") == ""


def test_find_runs_takes_a_run_a_group_or_a_runs_folder(tmp_path: Path, counting: Counting) -> None:
    a, b = make_run(tmp_path, seed=0), make_run(tmp_path, seed=1)
    (tmp_path / "g" / "spaceship-titanic" / ".2.tmp-x").mkdir()
    assert find_runs(a) == [a]
    assert find_runs(tmp_path / "g") == [a, b] == find_runs(tmp_path)
    assert [x.seed for x in audit_paths([tmp_path], [counting.name])] == [0, 1]
    with pytest.raises(UsageError, match="no audit check"):
        audit_paths([tmp_path], ["no-such-check"])
    with pytest.raises(UsageError, match="no finished run"):
        audit_paths([tmp_path / "g" / "spaceship-titanic" / ".2.tmp-x"])


def test_the_audit_imports_no_higher_stage() -> None:
    import subprocess
    import sys

    code = "import sys, podium.audit; print(sorted(m for m in sys.modules if m.startswith(('podium.run', 'podium.report', 'podium.cli', 'podium.serve'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_check_that_crashes_makes_the_run_unclear(tmp_path: Path) -> None:
    class Broken:
        name = "broken-test"

        def skip_reason(self, ctx: AuditContext) -> str | None:
            return None

        def cache_key(self, ctx: AuditContext) -> str:
            return "k"

        def run(self, ctx: AuditContext) -> CheckResult:
            raise RuntimeError("boom")

    register_check(Broken())
    try:
        audit = audit_run(make_run(tmp_path), ["broken-test"])
    finally:
        _CHECKS.pop("broken-test", None)
    assert audit.verdict == "unclear" and "the check failed: RuntimeError: boom" in audit.flags[0].reason
    assert not audit.flags[0].violation


def test_hostile_files_neither_hang_nor_flood_the_audit(tmp_path: Path) -> None:
    """A FIFO, a 10 GB sparse file and a linked submission: the audit reads bounded amounts and finishes."""
    run = make_run(tmp_path)
    os.mkfifo(run / "code" / "pipe.py")
    with open(run / "code" / "huge.py", "wb") as handle:
        handle.truncate(10 << 30)
    (tmp_path / "answers.csv").write_text("id,y\n1,2\n")
    os.symlink(tmp_path / "answers.csv", run / "submission" / "submission.csv")
    ctx = AuditContext(run)
    assert [p.name for p in ctx.code_files()] == ["huge.py"]
    assert ctx.submission is None and len(ctx.read_bytes(run / "code" / "huge.py") or b"") == 8 << 20
    assert ctx.sha256(run / "code" / "huge.py") is None and ctx.fingerprint(run / "code" / "huge.py").startswith(
        "10737418240:"
    )
    audit = audit_run(run, ["external", "integrity", "oracle"])
    assert audit.verdict in ("clean", "unclear") and not audit.violations


def test_best_code_of_search_and_aide(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    for node in (0, 1, 2):
        (run / "code" / "nodes" / f"{node:04d}").mkdir(parents=True)
        (run / "code" / "nodes" / f"{node:04d}" / "solution.py").write_text(f"print({node})\n")
    journal = [
        {"id": 0, "code_file": "/home/code/nodes/0000/solution.py", "metric": 0.7, "is_bug": False, "valid": True,
         "lower_is_better": False},
        {"id": 1, "code_file": "/home/code/nodes/0001/solution.py", "metric": 0.9, "is_bug": False, "valid": True},
        {"id": 2, "code_file": "/home/code/nodes/0002/solution.py", "metric": 0.99, "is_bug": True, "valid": True},
        {"id": 3, "code_file": "/home/code/../../record.json", "metric": 1.0, "is_bug": False, "valid": True},
    ]  # fmt: skip
    (run / "logs" / "journal.jsonl").write_text("".join(json.dumps(n) + "\n" for n in journal))
    ctx = AuditContext(run)
    assert ctx.best_code() == run / "code" / "nodes" / "0001" / "solution.py"
    assert len(ctx.code_files()) == 3
    aide = make_run(tmp_path, seed=1)
    (aide / "logs" / "aide" / "exp").mkdir(parents=True)
    (aide / "logs" / "aide" / "exp" / "best_solution.py").write_text("print('best')\n")
    ctx = AuditContext(aide)
    assert (
        ctx.best_code() == aide / "logs" / "aide" / "exp" / "best_solution.py" and ctx.best_code() in ctx.code_files()
    )


class Harnessed:
    """A check that cannot run while ``broken`` is set, as a judge without its API key cannot."""

    name = "harnessed-test"

    def __init__(self) -> None:
        self.broken = True
        self.calls = 0

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return None

    def cache_key(self, ctx: AuditContext) -> str:
        return "same inputs"

    def run(self, ctx: AuditContext) -> CheckResult:
        self.calls += 1
        if self.broken:
            raise HarnessError("no API key: set OPENAI_API_KEY")
        return CheckResult.from_flags(self.name, (), {"podium": "test"})


@pytest.fixture
def harnessed() -> Harnessed:
    check = Harnessed()
    register_check(check)
    yield check
    _CHECKS.pop(check.name, None)


def test_a_harness_error_is_said_as_such_and_never_cached(
    tmp_path: Path, harnessed: Harnessed, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.cli import main

    runs = [make_run(tmp_path, seed=seed) for seed in (0, 1)]
    assert main(["audit", str(tmp_path / "g"), "--checks", harnessed.name]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"podium: harness error: {harnessed.name} on 2 run(s): no API key: set OPENAI_API_KEY (")
    saved = read_audit(runs[0])
    assert saved is not None and saved.result(harnessed.name) is None  # no verdict written
    assert saved.verdict == "incomplete" and harnessed.name in saved.incomplete
    assert saved.harness_errors == {harnessed.name: "no API key: set OPENAI_API_KEY"}
    assert "g/spaceship-titanic/0: incomplete: " in captured.out
    harnessed.broken = False  # the key is set: the check runs, since nothing was cached
    assert main(["audit", str(tmp_path / "g"), "--checks", harnessed.name]) == 0
    assert harnessed.calls == 4 and read_audit(runs[0]).result(harnessed.name).verdict == "clean"
    assert read_audit(runs[0]).harness_errors == {}


def test_redo_clears_what_an_earlier_audit_cached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An audit.json holding the judge's `unclear` of a run audited without its API key (as podium wrote it before
    harness errors were told apart) is kept by a plain audit and dropped by --redo."""
    from podium.cli import main

    run = make_run(tmp_path)
    stale = CheckResult("judge", "unclear", (Flag("judge", "the check failed: no OPENAI_API_KEY", violation=False),),
                        key="k")  # fmt: skip
    old = RunAudit(str(run), "spaceship-titanic", 0, "unclear", (stale,))
    (run / AUDIT_FILE).write_text(json.dumps(old.to_json()))
    assert main(["audit", str(run), "--checks", "judge"]) == 0
    assert read_audit(run).result("judge") == stale
    assert main(["audit", str(run), "--checks", "judge", "--redo"]) == 0
    redone = read_audit(run)
    assert redone.result("judge") is None and redone.verdict == "incomplete" and "judge" in redone.incomplete
    assert "--model" in redone.skipped["judge"]


def test_files_with_more_than_one_hard_link_are_never_read(tmp_path: Path) -> None:
    """A hard link in a run folder may be a host file a crafted transfer linked in (or a file hidden under two
    names): it is read by no check, and the integrity statement says the run cannot be backed."""
    run = make_run(tmp_path)
    host = tmp_path / "host-secret.py"
    host.write_text("API_KEY = 'sk-live-...'\n")
    os.link(host, run / "code" / "leak.py")
    (run / "code" / "solution.py").write_text("import openai\n")
    os.link(run / "code" / "solution.py", run / "code" / "copy.py")
    (run / "code" / "fair.py").write_text("print(1)\n")
    ctx = AuditContext(run)
    assert [p.name for p in ctx.code_files()] == ["fair.py"]
    assert ctx.read_text(run / "code" / "leak.py") == "" and ctx.sha256(run / "code" / "leak.py") is None
    assert ctx.hard_links() == ("code/copy.py", "code/leak.py", "code/solution.py")
    assert ctx.read_text(host) != ""  # outside the run, a file is read as before
    integrity = audit_run(run, ["integrity"]).result("integrity")
    assert integrity.verdict == "unclear"
    note = next(f for f in integrity.flags if f.reason.startswith("files not read"))
    assert (
        note.reason == "files not read: 3 with more than one hard link (code/copy.py, code/leak.py, code/solution.py)"
    )


def test_an_audit_written_before_incomplete_runs_were_told_apart_is_not_clean(tmp_path: Path) -> None:
    """An older podium wrote `clean` for a run whose judge and plagiarism were skipped; read now, it is incomplete
    (so the report does not keep its medal), and a flagged one stays flagged."""
    run = make_run(tmp_path)
    external = CheckResult("external", "clean", (), {"podium": "old"}, key="k")
    old = RunAudit(str(run), "spaceship-titanic", 0, "clean", (external,), {"judge": "no judge model named"}).to_json()
    del old["incomplete"], old["harness_errors"]
    (run / AUDIT_FILE).write_text(json.dumps(old))
    read = read_audit(run)
    assert (
        read is not None
        and read.verdict == "incomplete"
        and {"judge", "plagiarism", "integrity"} <= set(read.incomplete)
    )
    flagged = {**old, "verdict": "flagged", "results": [{**external.to_json(), "verdict": "flagged"}]}
    (run / AUDIT_FILE).write_text(json.dumps(flagged))
    assert read_audit(run).verdict == "flagged"

"""The readers that take JSON or files from a run folder, a node or a bundle, each fed what used to crash it: a
document nested 200,000 deep (json.loads raises RecursionError, which `except ValueError` let through) and a
link or FIFO where a file should be."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from podium.untrusted import UntrustedJSONError, read_json

DEEP = "[" * 200_000 + "]" * 200_000


def test_read_json_refuses_deep_links_fifos_and_oversized(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "ok.json").write_text('{"a": 1}')
    (tmp_path / "link.json").symlink_to(tmp_path / "ok.json")
    os.mkfifo(tmp_path / "fifo.json")
    assert read_json(tmp_path / "ok.json") == {"a": 1}
    for name in ("deep.json", "link.json", "fifo.json", "missing.json"):
        with pytest.raises(UntrustedJSONError):
            read_json(tmp_path / name)
    with pytest.raises(UntrustedJSONError, match="over the 4 bytes"):
        read_json(tmp_path / "ok.json", max_bytes=4)


def test_the_dashboard_reads_a_deep_record_and_log_line_as_unreadable(tmp_path: Path) -> None:
    from podium.paths import RunPaths
    from podium.serve.runfiles import read_jsonl, read_record, tail

    run = RunPaths(tmp_path / "run")
    run.root.mkdir()
    run.record.write_text(DEEP)
    assert read_record(run) is None
    log = run.root / "resources.jsonl"
    log.write_text('{"t": 1}\n' + DEEP + "\n" + '{"t": 2}\n')
    assert read_jsonl(run.root, log) == [{"t": 1}, {"t": 2}]
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "answers.csv").write_text("private")
    (run.root / "logs").symlink_to(tmp_path / "secret")
    assert not tail(run.root, run.root / "logs" / "answers.csv").exists


def test_the_audit_and_the_report_read_deep_files_as_unreadable(tmp_path: Path) -> None:
    from podium.audit.registry import AUDIT_FILE, read_audit
    from podium.report.timescale import snapshots

    (tmp_path / AUDIT_FILE).write_text(DEEP)
    assert read_audit(tmp_path) is None
    index = tmp_path / "logs" / "snapshots" / "snapshots.jsonl"
    index.parent.mkdir(parents=True)
    index.write_text(DEEP + "\n" + '{"elapsed_s": 5, "file": "a.tar"}\n')
    assert snapshots(tmp_path) == [(5.0, "a.tar")]


def test_the_index_skips_a_deep_record(tmp_path: Path) -> None:
    from podium.store import _read_record

    path = tmp_path / "record.json"
    path.write_text(DEEP)
    assert _read_record(path, "g", "c", 0) is None


def test_a_deep_line_of_a_submission_list_is_a_usage_error_naming_the_line(tmp_path: Path) -> None:
    from podium.errors import UsageError
    from podium.grading.jsonl import read_submission_list

    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"competition_id": "spaceship-titanic", "submission_path": "a.csv"}\n' + DEEP + "\n")
    with pytest.raises(UsageError, match=r"runs\.jsonl:2: expected a JSON object"):
        read_submission_list(runs)

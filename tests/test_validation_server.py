"""The in-sandbox validation endpoint: server on a Unix socket, driven by the real client script."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.competition import Competition
from podium.fixtures import Fixture, make_fixture, write_csv, write_prepared
from podium.services import SANDBOX_FILES, ValidationServer, sandbox_file

CID = "spaceship-titanic"
CLIENT = sandbox_file("validate_submission.py")
Prepared = tuple[Competition, Fixture, Path]


@pytest.fixture
def short_dir(tmp_path: Path) -> Iterator[Path]:
    """tmp_path, or a shorter directory when tmp_path is too long for a Unix socket path."""
    if len(str(tmp_path)) < 80:
        yield tmp_path
        return
    short = Path(tempfile.mkdtemp(prefix="pv-", dir="/tmp"))
    yield short
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def prepared(tmp_path: Path) -> Prepared:
    comp = registry.get(CID)
    fixture = make_fixture(comp)
    prepared_dir = write_prepared(comp, fixture, tmp_path / "data")
    return comp, fixture, prepared_dir / comp.sample_submission


def _server(
    prepared: Prepared, root: Path, min_interval_s: float = 0.0, max_body_bytes: int = 1 << 20
) -> ValidationServer:
    comp, _, sample = prepared
    return ValidationServer(
        comp,
        sample,
        root / "v.sock",
        root / "validation.jsonl",
        min_interval_s=min_interval_s,
        max_body_bytes=max_body_bytes,
    )


def _client(server: ValidationServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PODIUM_VALIDATION_SOCKET": str(server.socket_path)}
    return subprocess.run(
        [sys.executable, str(CLIENT), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def _request(sock_path: Path, method: str, url: str, body: bytes | None = None) -> tuple[int, dict[str, object]]:
    class Conn(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(str(sock_path))

    conn = Conn("localhost", timeout=30)
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a 429/413 comes before the body is read
            conn.request(method, url, body=body)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_valid_submission_passes_and_no_score_is_ever_returned(
    prepared: Prepared, short_dir: Path, tmp_path: Path
) -> None:
    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    with _server(prepared, short_dir) as server:
        result = _client(server, str(perfect))
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Submission is valid" in result.stdout and "score" not in result.stdout.lower()
        status, payload = _request(server.socket_path, "POST", "/validate", perfect.read_bytes())
        assert status == 200
        assert set(payload) == {"valid", "error", "warnings"} and payload["valid"] is True
        assert "score" not in json.dumps(payload)
        assert _request(server.socket_path, "GET", "/health")[0] == 200
    assert [c["verdict"] for c in server.calls] == ["valid", "valid"]  # /health is not a validation call


@pytest.mark.parametrize("version", [1, 2])
def test_the_endpoint_checks_by_the_version_the_run_grades(version: int, short_dir: Path, tmp_path: Path) -> None:
    """google-quest@1 accepts a repeated qa_id as the published grader does; @2 refuses it: the agent of
    a run at either version hears what its grade will say (issue 19)."""
    comp = registry.get(f"google-quest-challenge@{version}")
    fixture = make_fixture(comp)
    sample = write_prepared(comp, fixture, tmp_path / "data") / comp.sample_submission
    ids = np.array(fixture.perfect["qa_id"], dtype=object)
    ids[5] = ids[15]
    repeated = write_csv(
        type(fixture.perfect)({**fixture.perfect.columns, "qa_id": ids}, fixture.perfect.n_rows),
        tmp_path / "submission.csv",
    )
    with ValidationServer(comp, sample, short_dir / "v.sock", tmp_path / "calls.jsonl") as server:
        status, payload = _request(server.socket_path, "POST", "/validate", repeated.read_bytes())
    assert status == 200
    assert payload["valid"] is (version == 1), payload


def test_missing_rows_are_invalid_and_named(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    comp, fixture, _ = prepared
    n = fixture.perfect.n_rows
    id_col = comp.id_columns[0]
    missing = [str(v) for v in fixture.perfect[id_col][n - 2 :]]
    short = write_csv(fixture.perfect.take(np.arange(n - 2)), tmp_path / "submission.csv")
    with _server(prepared, short_dir) as server:
        result = _client(server, str(short))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Submission is invalid" in result.stdout
    assert all(m in result.stdout for m in missing), result.stdout
    (call,) = server.calls
    assert call["verdict"] == "invalid" and all(m in call["error"] for m in missing)


def test_non_csv_name_is_invalid_as_in_grading(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    _, fixture, _ = prepared
    other = write_csv(fixture.perfect, tmp_path / "submission.txt")
    with _server(prepared, short_dir) as server:
        result = _client(server, str(other))
        assert result.returncode == 1 and ".csv" in result.stdout, result.stdout
        assert "submission.txt" in result.stdout  # the agent's file name, not the server's temp file
        absent = _client(server, str(tmp_path / "nothing.csv"))
        assert absent.returncode == 1 and "no submission file" in absent.stdout


def test_rate_limit_and_log(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    with _server(prepared, short_dir, min_interval_s=60) as server:
        first = _client(server, str(perfect))
        second = _client(server, str(perfect))
        status, payload = _request(server.socket_path, "POST", "/validate", perfect.read_bytes())
    assert first.returncode == 0
    assert second.returncode == 2 and "rate limited" in second.stdout and "429" in second.stdout
    assert status == 429 and 0 < float(str(payload["retry_after_s"])) <= 60
    assert "retry in" in str(payload["error"])
    lines = (short_dir / "validation.jsonl").read_text().splitlines()
    calls = [json.loads(line) for line in lines]
    assert calls == server.calls
    assert [c["verdict"] for c in calls] == ["valid", "rate-limited", "rate-limited"]
    assert [c["status"] for c in calls] == [200, 429, 429]
    size = perfect.stat().st_size
    for call in calls:
        assert call["time"].endswith("+00:00") and call["body_bytes"] == size and call["duration_s"] >= 0
    assert calls[0]["error"] is None and "rate limited" in calls[1]["error"]


def test_oversized_body_is_413(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    with _server(prepared, short_dir, max_body_bytes=16) as server:
        result = _client(server, str(perfect))
    assert result.returncode == 2 and "413" in result.stdout and "at most 16" in result.stdout, result.stdout
    (call,) = server.calls
    assert call["verdict"] == "error" and call["status"] == 413


def test_a_bug_in_validation_is_a_harness_error(
    prepared: Prepared,
    short_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("podium.services.validation.validate_isolated", broken)
    with _server(prepared, short_dir) as server:
        result = _client(server, str(perfect))
        status, payload = _request(server.socket_path, "POST", "/validate", perfect.read_bytes())
    assert result.returncode == 2 and "500" in result.stdout and "harness error" in result.stdout, result.stdout
    assert "invalid" not in result.stdout
    assert status == 500 and "valid" not in payload and "harness error" in str(payload["error"])
    call = server.calls[0]
    assert call["verdict"] == "error" and call["status"] == 500 and "RuntimeError: boom" in call["traceback"]


def test_stop_removes_the_socket_and_client_reports_unreachable(
    prepared: Prepared, short_dir: Path, tmp_path: Path
) -> None:
    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    server = _server(prepared, short_dir)
    server.start()
    assert server.socket_path.exists() and server.running
    health = {"ok": True, "competition": f"{CID}@1", "max_body_bytes": server.max_body_bytes}
    assert _request(server.socket_path, "GET", "/health") == (200, health)
    assert _request(server.socket_path, "GET", "/nope")[0] == 404
    server.stop()
    assert not server.socket_path.exists() and not server.running
    server.stop()  # idempotent
    result = _client(server, str(perfect))
    assert result.returncode == 2 and "unreachable" in result.stdout


def test_shell_wrapper_and_shipped_files(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    for name in SANDBOX_FILES:
        assert sandbox_file(name).is_file()
    _, fixture, _ = prepared
    sandbox = tmp_path / "home"
    sandbox.mkdir()
    for name in SANDBOX_FILES:
        shutil.copy(sandbox_file(name), sandbox / name)
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    with _server(prepared, short_dir) as server:
        env = {**os.environ, "PODIUM_VALIDATION_SOCKET": str(server.socket_path)}
        result = subprocess.run(
            ["sh", str(sandbox / "validate_submission.sh"), str(perfect)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_shell_client_falls_back_to_curl_without_python(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    """An agent image without python3: validate_submission.sh reaches the socket with curl instead."""
    _, fixture, _ = prepared
    good = write_csv(fixture.perfect, tmp_path / "submission.csv")
    bad = write_csv(fixture.perfect.take(np.arange(fixture.perfect.n_rows - 1)), tmp_path / "short.csv")
    tools = tmp_path / "bin"  # a PATH with the shell tools and curl, but no python3
    tools.mkdir()
    for name in ("curl", "tail", "sed", "basename", "tr", "dirname", "printf"):
        (tools / name).symlink_to(shutil.which(name))
    script = str(sandbox_file("validate_submission.sh"))
    with _server(prepared, short_dir) as server:
        env = {"PATH": str(tools), "PODIUM_VALIDATION_SOCKET": str(server.socket_path)}
        runs = {name: subprocess.run(["/bin/sh", script, str(path)], capture_output=True, text=True, env=env)
                for name, path in (("good", good), ("bad", bad), ("missing", tmp_path / "nope.csv"))}  # fmt: skip
        calls = server.calls
    assert runs["good"].returncode == 0 and "Submission is valid" in runs["good"].stdout, runs["good"]
    assert runs["bad"].returncode == 1 and "invalid" in runs["bad"].stdout
    assert runs["missing"].returncode == 1 and "no submission file" in runs["missing"].stdout
    assert [c["verdict"] for c in calls] == ["valid", "invalid"]
    assert not any("score" in r.stdout.lower() for r in runs.values())


def test_bodies_are_capped_like_submissions_and_kept_in_the_run_folder(
    prepared: Prepared, short_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cap is grading's size cap, stated in /health; a body goes to the run's folder, not /tmp,
    and is checked through its descriptor in a bounded child process."""
    from podium.grading.files import size_cap
    from podium.services import validation as validation_server

    comp, fixture, sample = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    run_dir = tmp_path / "run"
    real = validation_server.validate_isolated
    where: list[str] = []

    def spy(competition: Competition, file: object, *args: object, **kwargs: object) -> object:
        where.append(os.readlink(f"/proc/self/fd/{file.fd}"))  # type: ignore[attr-defined]
        return real(competition, file, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(validation_server, "validate_isolated", spy)
    with ValidationServer(comp, sample, short_dir / "v.sock", run_dir / "validation_calls.jsonl") as server:
        assert server.max_body_bytes == size_cap(sample.stat().st_size) >= 256 * 2**20
        status, health = _request(server.socket_path, "GET", "/health")
        assert status == 200 and health["max_body_bytes"] == server.max_body_bytes
        status, payload = _request(server.socket_path, "POST", "/validate", perfect.read_bytes())
        assert status == 200 and payload["valid"] is True
    (body,) = where
    assert body.startswith(str(run_dir.resolve())) and not body.startswith(tempfile.gettempdir() + "/podium")
    assert sorted(p.name for p in run_dir.iterdir()) == ["validation_calls.jsonl"]  # nothing left behind


@pytest.mark.parametrize("cell", ["0x10", "1_0", "\u0661", "\u00a01", "1e999", "", "nan(1)", "+0.5", "9" * 400])
def test_the_endpoint_validate_and_grade_give_one_verdict(cell: str, tmp_path: Path, short_dir: Path) -> None:
    """One reader, one check: the same file gets the same verdict and message from all three."""
    from podium.grading import grade
    from podium.grading.table import Frame
    from podium.grading.validator import validate

    comp = registry.get("dogs-vs-cats-redux-kernels-edition")
    fixture = make_fixture(comp)
    sample = write_prepared(comp, fixture, tmp_path) / comp.sample_submission
    columns = {name: values.copy() for name, values in fixture.perfect.columns.items()}
    columns["id"][3] = cell
    path = write_csv(Frame(columns, fixture.perfect.n_rows), tmp_path / "submission.csv")
    report, result = grade(comp, path, tmp_path), validate(comp, path, sample)
    with ValidationServer(comp, sample, short_dir / "v.sock", tmp_path / "calls.jsonl") as server:
        status, payload = _request(server.socket_path, "POST", "/validate", path.read_bytes())
    assert status == 200
    assert payload["valid"] is result.valid is report.valid_submission
    assert payload["error"] == result.error == report.error


def test_a_linked_submission_is_invalid_as_in_grading(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    """Grading never follows a link, so both clients refuse one before sending it (the same verdict)."""
    _, fixture, _ = prepared
    real = write_csv(fixture.perfect, tmp_path / "best.csv")
    (tmp_path / "sub").mkdir()
    linked = tmp_path / "sub" / "submission.csv"
    linked.symlink_to(real)
    (tmp_path / "via").symlink_to(tmp_path)
    with _server(prepared, short_dir) as server:
        env = {**os.environ, "PODIUM_VALIDATION_SOCKET": str(server.socket_path)}
        runs = [
            _client(server, str(linked)),
            _client(server, str(tmp_path / "via" / "best.csv")),
            subprocess.run(
                ["/bin/sh", str(sandbox_file("validate_submission.sh")), str(linked)],
                capture_output=True,
                text=True,
                env={**env, "PATH": "/nonexistent"},
            ),
        ]
        calls = server.calls
    for result in runs:
        assert result.returncode == 1 and "symbolic link" in result.stdout, result
    assert calls == []


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_mlebench_clients_post_a_multipart_form_and_read_result(
    prepared: Prepared, short_dir: Path, tmp_path: Path
) -> None:
    """MLE-bench's validate_submission.sh posts `curl -F file=@PATH`; the answer carries "result" too."""
    _, fixture, _ = prepared
    good = write_csv(fixture.perfect, tmp_path / "submission.csv")
    bad = write_csv(fixture.perfect.take(np.arange(fixture.perfect.n_rows - 1)), tmp_path / "short.csv")
    with _server(prepared, short_dir) as server:
        answers = []
        for path in (good, bad):
            out = subprocess.run(
                ["curl", "-sS", "--unix-socket", str(server.socket_path), "-F", f"file=@{path}", "http://localhost/validate"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            answers.append(json.loads(out.stdout))
            time.sleep(1.1)  # the endpoint's rate limit
        empty = subprocess.run(
            ["curl", "-sS", "--unix-socket", str(server.socket_path), "-F", "other=1", "http://localhost/validate"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert answers[0]["result"] == "Submission is valid." and answers[0]["valid"] is True
    assert answers[1]["result"].startswith("Submission is invalid: ") and answers[1]["valid"] is False
    assert "no 'file' field" in json.loads(empty.stdout)["error"]


def test_every_call_logs_its_body_digest_and_row_sketch(prepared: Prepared, short_dir: Path, tmp_path: Path) -> None:
    import hashlib

    from podium.services.digest import sketch_distance

    _, fixture, _ = prepared
    perfect = write_csv(fixture.perfect, tmp_path / "submission.csv")
    lines = perfect.read_text().splitlines()
    changed = tmp_path / "changed.csv"
    cells = lines[1].split(",")
    cells[-1] = "True" if cells[-1] != "True" else "False"
    changed.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    reordered = tmp_path / "reordered.csv"
    reordered.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")
    with _server(prepared, short_dir) as server:
        for body in (perfect, changed, reordered):
            while (status := _request(server.socket_path, "POST", "/validate", body.read_bytes())[0]) == 429:
                time.sleep(0.05)  # the previous call still holds the slot for an instant after its reply
            assert status == 200
    first, second, third = (c["body"] for c in server.calls if c["status"] == 200)
    assert first["sha256"] == hashlib.sha256(perfect.read_bytes()).hexdigest()
    assert first["rows"] == len(lines) - 1
    assert sketch_distance(first["row_sketch"], second["row_sketch"]) == 1
    assert sketch_distance(first["row_sketch"], third["row_sketch"]) == 0 and first["sha256"] != third["sha256"]

"""`podium serve` against a runs folder made by real `podium run` calls: the pages and their numbers (from
the index and the records), the journal tree, redaction, the token, refused paths, read-only serving,
the command's one-line errors, and in a real browser the click-through and a run in progress whose
log grows."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from podium.cli import main
from podium.errors import UsageError
from podium.serve import RunsIndex, create_app
from podium.serve.redact import PRIVATE, SECRET
from podium.serve.security import check_bind, loopback_hosts
from podium.serve.server import bind
from podium.store import RunStore

COMPETITIONS = ("practice-titanic", "practice-wine")
GROUPS = ("exp-dummy", "exp-baseline")
TOKEN = "test-token-0123456789abcdef"
PODIUM_JOURNAL_RUN = ("exp-baseline", "practice-titanic", 0)
AIDE_JOURNAL_RUN = ("exp-baseline", "practice-wine", 0)
SECRET_KEY = "sk-proj-abcdefghijklmnopqrstuvwx0123"
PRIVATE_FILE = "/root/.cache/podium/data/practice-titanic/prepared/private/test.csv"


def _podium(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.fixture(scope="module")
def made_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two agents, two competitions, one seed each: four real runs landed and indexed by `podium run`."""
    runs = tmp_path_factory.mktemp("made") / "runs"
    result = _podium(
        "run", "--agent", "dummy", "--agent", "baseline", "--competitions", ",".join(COMPETITIONS),
        "--seeds", "1", "--run-group", "exp", "--time-limit", "2m", "--workers", "2", "--runs-dir", str(runs),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return runs


def _write_journals(runs: Path) -> None:
    """No built-in agent that runs offline writes a journal (`search` and `aide` need a model), so the test
    writes one of each into copies of real run folders, in the formats they document: podium's
    `logs/journal.jsonl` (one line per node, code in /home/code/nodes/NNNN/solution.py) and AIDE's
    `logs/aide/<exp>/journal.json` (nodes, node2parent)."""
    run = runs.joinpath(*map(str, PODIUM_JOURNAL_RUN))
    lines = []
    for node_id, parent, operator, bug, metric, code, output in (
        (0, None, "draft", True, None, "import pandas\nraise ValueError('no column')\n", "ValueError: no column"),
        (1, 0, "debug", False, 0.81, "print('fixed draft')\n", "holdout accuracy 0.81"),
        (2, 1, "improve", False, 0.83, "print('tuned trees')\n", "holdout accuracy 0.83"),
    ):
        folder = run / "code" / "nodes" / f"{node_id:04d}"
        folder.mkdir(parents=True)
        (folder / "solution.py").write_text(code)
        lines.append({
            "id": node_id, "parent": parent, "operator": operator, "plan": f"plan of node {node_id}",
            "code_file": f"/home/code/nodes/{node_id:04d}/solution.py", "started_s": 1.0, "seconds": 2.5,
            "exit_code": 1 if bug else 0, "killed_for": None, "output_tail": output, "is_bug": bug,
            "summary": f"review of node {node_id}", "metric": metric, "lower_is_better": False, "valid": not bug,
            "validation": "", "failure": None, "input_tokens": 100, "output_tokens": 50, "debug_depth": 0,
        })  # fmt: skip
    (run / "logs" / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    aide = runs.joinpath(*map(str, AIDE_JOURNAL_RUN)) / "logs" / "aide" / "2-exp"
    aide.mkdir(parents=True)
    nodes = [
        {"code": "print('aide draft')", "plan": "aide plan A", "step": 0, "id": "a1b2", "ctime": 1.0, "parent": None,
         "children": [], "_term_out": ["aide says ", "0.61\n"], "exec_time": 1.5, "exc_type": None, "exc_info": None,
         "exc_stack": None, "analysis": "works", "metric": {"value": 0.61, "maximize": True}, "is_buggy": False},
        {"code": "print('aide better')", "plan": "aide plan B", "step": 1, "id": "c3d4", "ctime": 2.0, "parent": None,
         "children": [], "_term_out": ["aide says 0.66\n"], "exec_time": 1.2, "exc_type": None, "exc_info": None,
         "exc_stack": None, "analysis": "better", "metric": {"value": 0.66, "maximize": True}, "is_buggy": False},
    ]  # fmt: skip
    (aide / "journal.json").write_text(json.dumps({"nodes": nodes, "node2parent": {"c3d4": "a1b2"}, "__version": "2"}))


@pytest.fixture(scope="module")
def runs(made_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the real runs with the journals, a secret and a private path in a log, and model calls."""
    runs = tmp_path_factory.mktemp("served") / "runs"
    shutil.copytree(made_runs, runs)
    _write_journals(runs)
    run = runs / "exp-dummy" / "practice-titanic" / "0"
    with open(run / "logs" / "agent.stdout.log", "a") as log:
        log.write(f"using key {SECRET_KEY}\nOPENAI_API_KEY=plainsecretvalue123\nreading {PRIVATE_FILE}\n")
    # what the LLM proxy logs per call (podium.services.llm), for an agent with model access
    calls = [
        {"time": "2026-01-01T00:00:00", "path": "/v1/chat/completions", "model": "m1", "status": 200,
         "input_tokens": 1200, "output_tokens": 300, "cached_input_tokens": 0, "cost_usd": 0.0125, "seconds": 1.5},
        {"time": "2026-01-01T00:00:05", "path": "/v1/chat/completions", "model": "m1", "status": 200,
         "input_tokens": 800, "output_tokens": 200, "cached_input_tokens": 0, "cost_usd": 0.0075, "seconds": 1.0},
    ]  # fmt: skip
    (run / "llm_calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    call = {"time": "2026-01-01T00:00:01", "verdict": "invalid", "status": 200, "error": "missing ids: 7, 9",
            "body_bytes": 2048, "duration_s": 0.05}  # fmt: skip
    (run / "validation_calls.jsonl").write_text(json.dumps(call) + "\n")
    return runs


@pytest.fixture(scope="module")
def client(runs: Path) -> Iterator[TestClient]:
    with TestClient(create_app(runs)) as test_client:
        yield test_client


def _record(runs: Path, group: str, competition: str, seed: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((runs / group / competition / str(seed) / "record.json").read_text())
    return data


def _row(html: str, marker: str) -> list[str]:
    """The words of the table row that holds ``marker``, tags left out."""
    at = html.index(marker)
    row = html[html.rindex("<tr", 0, at) : html.index("</tr>", at)]
    return re.sub(r"<[^>]+>", " ", row).split()


def test_home_lists_the_groups_with_their_counts_from_the_index(client: TestClient, runs: Path) -> None:
    page = client.get("/")
    assert page.status_code == 200
    for group in GROUPS:
        assert f'href="/group/{group}"' in page.text
    medals = sum(_record(runs, "exp-baseline", c)["grade"]["any_medal"] for c in COMPETITIONS)
    row = _row(page.text, 'href="/group/exp-baseline"')
    assert row[:4] == ["exp-baseline", "baseline", "2", "2"], row  # group, agent, runs, valid
    assert row[8] == str(medals), row


def test_the_group_page_shows_each_runs_grade_percentile_and_medal(client: TestClient, runs: Path) -> None:
    page = client.get("/group/exp-baseline")
    assert page.status_code == 200
    settings = json.loads((runs / "exp-baseline" / "group.json").read_text())["settings"]
    assert f"<dd>{settings['cpus']:g} CPUs, " in page.text and "<dd>2m 00s</dd>" in page.text
    for competition in COMPETITIONS:
        grade = _record(runs, "exp-baseline", competition)["grade"]
        row = _row(page.text, f'href="/run/exp-baseline/{competition}/0"')
        assert row[4:6] == [f"{grade['score']:.5g}", f"{grade['percentile'] * 100:.3g}"], row
        medal = next((m for m in ("gold", "silver", "bronze") if grade[f"{m}_medal"]), "-")
        assert row[7] == medal, row


def test_the_run_page_shows_grade_resources_logs_and_calls(client: TestClient, runs: Path) -> None:
    record = _record(runs, "exp-baseline", "practice-titanic")
    page = client.get("/run/exp-baseline/practice-titanic/0")
    assert page.status_code == 200
    assert f'<dd id="score">{record["grade"]["score"]:.5g}</dd>' in page.text
    assert f'<dd id="percentile">{record["grade"]["percentile"] * 100:.3g}</dd>' in page.text
    samples = record["agent_result"]["samples"]
    if len(samples) >= 2:
        assert page.text.count("<polyline") >= 2 and f"{len(samples)} samples" in page.text
    else:
        assert 'id="samples-note"' in page.text
    stdout = (runs / "exp-baseline" / "practice-titanic" / "0" / "logs" / "agent.stdout.log").read_text()
    assert stdout.splitlines()[0].replace("'", "&#39;") in page.text
    calls = client.get("/run/exp-dummy/practice-titanic/0").text
    assert "LLM calls (2)" in calls and "2000 input + 500 output tokens" in calls and "$0.02" in calls
    assert "Validation calls (1)" in calls and "missing ids: 7, 9" in calls


def test_the_journal_is_a_tree_and_each_node_shows_its_code_and_output(client: TestClient) -> None:
    page = client.get("/run/exp-baseline/practice-titanic/0").text
    assert "3 node(s) from podium&#39;s search agent" in page
    nested = page.split("#0 draft")[1]
    assert nested.index("#1 debug") < nested.index("#2 improve") and nested.count("<ul") >= 2
    node = client.get("/run/exp-baseline/practice-titanic/0/node/2")
    assert node.status_code == 200
    assert "print(&#39;tuned trees&#39;)" in node.text and "holdout accuracy 0.83" in node.text
    assert (
        '<dd id="node-metric">0.83</dd>' in node.text
        and 'href="/run/exp-baseline/practice-titanic/0/node/1"' in node.text
    )
    aide = client.get("/run/exp-baseline/practice-wine/0").text
    assert "2 node(s) from AIDE" in aide and "/node/c3d4" in aide
    child = client.get("/run/exp-baseline/practice-wine/0/node/c3d4").text
    assert "print(&#39;aide better&#39;)" in child and "aide says 0.66" in child and "#0 draft" in child
    assert client.get("/run/exp-baseline/practice-wine/0/node/nope").status_code == 404


def test_pages_never_show_keys_tokens_or_private_paths(runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "envtokenvalue42")
    log = runs / "exp-dummy" / "practice-wine" / "0" / "logs" / "agent.stderr.log"
    before = log.read_bytes()
    log.write_text(before.decode() + "token from the environment: envtokenvalue42\n")
    try:
        with TestClient(create_app(runs)) as test_client:
            shown = [
                test_client.get("/run/exp-dummy/practice-titanic/0").text,
                test_client.get("/api/run/exp-dummy/practice-titanic/0/log/stdout").text,
                test_client.get("/run/exp-dummy/practice-wine/0").text,
                test_client.get("/api/run/exp-dummy/practice-wine/0/log/stderr").text,
            ]
    finally:
        log.write_bytes(before)
    everything = "\n".join(shown)
    for secret in (SECRET_KEY, "plainsecretvalue123", PRIVATE_FILE, "prepared/private", "envtokenvalue42"):
        assert secret not in everything
    assert everything.count(SECRET) >= 3 and PRIVATE in everything


def test_a_token_is_needed_on_every_request_and_sets_a_cookie(runs: Path) -> None:
    with TestClient(create_app(runs, token=TOKEN), follow_redirects=False) as anonymous:
        assert anonymous.get("/").status_code == 401
        assert anonymous.get("/api/live").status_code == 401
        assert anonymous.get("/static/serve.js").status_code == 401
        assert anonymous.get("/", params={"token": "wrong"}).status_code == 401
        assert anonymous.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert anonymous.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert anonymous.get("/api/live", headers={"X-Podium-Token": TOKEN}).status_code == 200
    with TestClient(create_app(runs, token=TOKEN), follow_redirects=False) as browser:
        entry = browser.get("/group/exp-dummy", params={"token": TOKEN})
        assert entry.status_code == 303 and entry.headers["location"] == "/group/exp-dummy"
        assert "HttpOnly" in entry.headers["set-cookie"]
        page = browser.get("/group/exp-dummy")  # the cookie now carries it
        assert page.status_code == 200 and TOKEN not in page.text


def test_a_loopback_dashboard_answers_only_loopback_host_names(runs: Path) -> None:
    app = create_app(runs, allowed_hosts=loopback_hosts("127.0.0.1", 8000))
    with TestClient(app, base_url="http://127.0.0.1:8000") as local:
        answer = local.get("/")
        assert answer.status_code == 200 and "script-src 'self'" in answer.headers["content-security-policy"]
    with TestClient(app, base_url="http://rebound.example:8000") as rebound:  # DNS rebinding
        assert rebound.get("/").status_code == 400
    assert check_bind("127.0.0.1", None) is None and check_bind("::1", None) is None
    with pytest.raises(UsageError, match="needs a token"):
        check_bind("192.168.1.5", None)


def test_names_in_urls_are_looked_up_never_joined_as_paths(client: TestClient, runs: Path) -> None:
    refused = [
        "/group/%2e%2e", "/group/.owners", "/group/podium.db", "/group/exp-dummy%2f..",
        "/run/exp-dummy/..%2f..%2f..%2fetc/0", "/run/exp-dummy/practice-titanic/0%2f..%2f..",
        "/run/..%2fexp-dummy/practice-titanic/0", "/run/exp-dummy/practice-titanic/-1", "/run/exp-dummy/.owners/0",
        "/api/run/exp-dummy/practice-titanic/0/log/..%2frecord.json", "/api/run/exp-dummy/practice-titanic/0/log/record",
        "/run/exp-dummy/practice-titanic/0/node/..%2f..", "/static/..%2f..%2fapp.py", "/static/%2e%2e/app.py",
    ]  # fmt: skip
    for url in refused:
        answer = client.get(url)
        assert answer.status_code == 404, url
        assert "run_group" not in answer.text and "import " not in answer.text, url
    assert client.get("/run/exp-dummy/practice-titanic/0").status_code == 200


def test_links_planted_in_a_run_folder_are_not_followed(runs: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, symlinks=True)
    run = copy / "exp-baseline" / "practice-titanic" / "0"
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET OUTSIDE THE RUN\n")
    (run / "logs" / "agent.stdout.log").unlink()
    (run / "logs" / "agent.stdout.log").symlink_to(outside)
    code = run / "code" / "nodes" / "0002" / "solution.py"
    code.unlink()
    code.symlink_to(outside)
    with TestClient(create_app(copy)) as test_client:
        assert "SECRET OUTSIDE" not in test_client.get("/api/run/exp-baseline/practice-titanic/0/log/stdout").text
        assert "SECRET OUTSIDE" not in test_client.get("/run/exp-baseline/practice-titanic/0").text
        node = test_client.get("/run/exp-baseline/practice-titanic/0/node/2").text
        assert "SECRET OUTSIDE" not in node and "(no code file)" in node


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        out[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns, digest)
    out["."] = (0, root.stat().st_mtime_ns, "")
    return out


def test_serving_writes_nothing_in_the_runs_folder(runs: Path) -> None:
    before = _snapshot(runs)
    with TestClient(create_app(runs)) as test_client:
        urls = ["/", "/api/live", "/run/exp-baseline/practice-titanic/0/node/1", "/run/exp-baseline/practice-wine/0"]
        urls += [f"/group/{g}" for g in GROUPS] + [f"/run/{g}/{c}/0" for g in GROUPS for c in COMPETITIONS]
        urls += [f"/api/run/{g}/{c}/0/log/{n}" for g in GROUPS for c in COMPETITIONS for n in ("stdout", "stderr")]
        for url in urls:
            assert test_client.get(url).status_code == 200, url
    assert _snapshot(runs) == before  # no file added, changed or touched: podium.db (and no -journal) included


def test_an_index_without_the_new_columns_is_read_and_migrated(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    old = sqlite3.connect(root / "podium.db")  # the schema podium wrote before percentile and rank
    old.execute(
        "CREATE TABLE runs (run_group TEXT NOT NULL, competition_id TEXT NOT NULL, competition_version INTEGER NOT "
        "NULL, seed INTEGER NOT NULL, agent TEXT NOT NULL, status TEXT NOT NULL, score REAL, valid_submission INTEGER "
        "NOT NULL, submission_exists INTEGER NOT NULL, above_median INTEGER NOT NULL, gold_medal INTEGER NOT NULL, "
        "silver_medal INTEGER NOT NULL, bronze_medal INTEGER NOT NULL, any_medal INTEGER NOT NULL, record_path TEXT "
        "NOT NULL, finished_at TEXT NOT NULL, other_versions TEXT NOT NULL DEFAULT '[]', "
        "UNIQUE (run_group, competition_id, seed, agent))"
    )
    record = root / "g" / "c" / "0" / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"grade": {"score": 0.5, "percentile": 0.8, "rank": 3}}))
    old.execute(
        "INSERT INTO runs VALUES ('g', 'c', 1, 0, 'a', 'finished', 0.5, 1, 1, 1, 0, 0, 1, 1, ?, 't', '[]')",
        (str(record),),
    )
    old.commit()
    old.close()
    index = RunsIndex(root)
    [row] = index.runs("g")
    assert row["percentile"] is None and row["medal"] == "bronze" and index.group_names() == ["g"]
    with TestClient(create_app(root)) as test_client:
        assert test_client.get("/group/g").status_code == 200
    store = RunStore(root)  # podium run migrates it
    columns = {r[1] for r in sqlite3.connect(root / "podium.db").execute("PRAGMA table_info(runs)")}
    assert {"percentile", "rank"} <= columns and store.rows("g")[0]["score"] == 0.5
    [migrated] = RunsIndex(root).runs("g")  # the runs indexed before were placed from their records, once
    assert (migrated["percentile"], migrated["rank"]) == (0.8, 3)


def test_the_command_refuses_with_one_line_errors(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def error(*args: str) -> str:
        assert main(["serve", *args]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("podium: error: ")
        return lines[0]

    assert "no such folder" in error("--runs-dir", str(tmp_path / "missing"))
    assert "--token" in error("--runs-dir", str(runs), "--host", "0.0.0.0")
    taken = bind("127.0.0.1", 0)
    try:
        assert "in use" in error("--runs-dir", str(runs), "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    monkeypatch.setitem(sys.modules, "starlette", None)
    assert "pip install 'podium[serve]'" in error("--runs-dir", str(runs))
    assert not (tmp_path / "missing").exists()


def test_podium_serve_answers_and_stops_cleanly_on_ctrl_c(runs: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "podium", "serve", "--runs-dir", str(runs), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /group/exp-dummy HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = b"".join(iter(lambda: conn.recv(65536), b""))
        assert answer.startswith(b"HTTP/1.1 200") and b"practice-wine" in answer
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=15) == 0
        assert "stopped" in server.stderr.read()
    finally:
        if server.poll() is None:
            server.kill()


# -- in a real browser -----------------------------------------------------------------------------


@pytest.fixture
def served(runs: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app on uvicorn in a thread, on a free port, over a copy of the runs (so a test may stage a run)."""
    import uvicorn

    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(copy, poll_ms=200), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", copy
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _own_requests_only(page: Any, base: str) -> list[str]:
    elsewhere: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(base) else elsewhere.append(request.url))
    return elsewhere


@pytest.mark.docs_screenshot("dashboard.png")
def test_browser_home_page_lists_the_groups_with_their_figures(page: Any, served: tuple[str, Path]) -> None:
    base, _ = served
    elsewhere = _own_requests_only(page, base)
    page.goto(base + "/")
    groups = page.eval_on_selector_all("a.group-link", "links => links.map(a => a.textContent.trim())")
    assert {"exp-baseline", "exp-dummy"} <= set(groups), groups
    assert elsewhere == []


def test_browser_clicks_from_the_groups_to_a_journal_node(page: Any, served: tuple[str, Path]) -> None:
    base, runs = served
    elsewhere = _own_requests_only(page, base)
    page.goto(base + "/")
    page.click("a.group-link:text-is('exp-baseline')")
    page.wait_for_url(f"{base}/group/exp-baseline")
    page.click("a.run-link:text-is('practice-titanic')")
    page.wait_for_url(f"{base}/run/exp-baseline/practice-titanic/0")
    grade = _record(runs, "exp-baseline", "practice-titanic")["grade"]
    assert page.inner_text("#score") == f"{grade['score']:.5g}"
    assert page.locator("ul.tree ul.tree a.node-link").count() == 2  # debug under draft, improve under debug
    page.click("a.node-link:has-text('#2 improve')")
    page.wait_for_url(f"{base}/run/exp-baseline/practice-titanic/0/node/2")
    assert page.inner_text("#node-code").strip() == "print('tuned trees')"
    assert page.inner_text("#node-output") == "holdout accuracy 0.83"
    assert elsewhere == []


def test_browser_shows_a_run_in_progress_and_its_growing_log(page: Any, served: tuple[str, Path]) -> None:
    base, runs = served
    staging = RunStore(runs).stage("exp-dummy", "practice-wine", 7)  # as podium run stages a run, not landed
    (staging / "home").mkdir()
    (staging / "home" / "instructions.md").write_text("the task\n")
    (staging / "logs").mkdir()
    log = staging / "logs" / "agent.stdout.log"
    log.write_text("step 1 of the agent\n")
    elsewhere = _own_requests_only(page, base)
    page.goto(base + "/")
    live = page.locator("#live-runs a:text-is('practice-wine')")
    live.wait_for()
    assert "running" in page.inner_text("#live-runs")
    live.click()
    page.wait_for_url(f"{base}/run/exp-dummy/practice-wine/7")
    assert "in progress" in page.inner_text("h1")
    assert "No resource graph yet" in page.inner_text("#samples-note")  # staged, but no agent has started
    assert page.inner_text("#log-stdout").strip() == "step 1 of the agent"
    with open(log, "a") as handle:
        handle.write("step 2 of the agent\n")
    page.locator("#log-stdout:has-text('step 2 of the agent')").wait_for(timeout=10_000)  # polled by serve.js
    assert re.fullmatch(r"\d+s|\d+m \d\ds", page.inner_text("#elapsed"))
    assert elsewhere == []


SLOW_AGENT = """
import shutil, time

held = bytearray(64 << 20)  # 64 MiB in use, so the memory graph has something to show
for step in range(1, 41):  # about 20 s: time for the test to watch it live
    held[step << 20] = 1
    print(f"step {step} of the slow agent", flush=True)
    time.sleep(0.5)
shutil.copyfile("/home/data/sample_submission.csv", "/home/submission/submission.csv")
"""


def test_browser_follows_a_real_podium_run_while_it_goes(page: Any, served: tuple[str, Path], tmp_path: Path) -> None:
    """`podium run` of an agent that takes about 20 s: the dashboard lists it in progress, its log grows, its
    memory and CPU graphs are drawn from the samples the sandbox writes as it goes; once it lands, the run's
    page shows its grade."""
    base, runs = served
    agent = tmp_path / "slow-agent"
    agent.mkdir()
    (agent / "agent.yaml").write_text("name: slow\ncommand: [python3, /home/agent/main.py]\n")
    (agent / "main.py").write_text(SLOW_AGENT)
    process = subprocess.Popen(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", "practice-wine",
         "--seeds", "1", "--run-group", "live", "--time-limit", "3m", "--runs-dir", str(runs)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    try:
        elsewhere = _own_requests_only(page, base)
        page.goto(base + "/")
        live = page.locator("#live-runs a:text-is('practice-wine')")
        live.wait_for(timeout=60_000)  # polled from /api/live
        live.click()
        page.wait_for_url(f"{base}/run/live/practice-wine/0")
        assert "in progress" in page.inner_text("h1")
        page.locator("#log-stdout:has-text('step 3 of the slow agent')").wait_for(timeout=30_000)
        memory = page.locator("figure.chart[data-title='memory in use'] polyline")
        memory.wait_for(state="attached", timeout=30_000)  # drawn by serve.js from /api/run/.../resources
        assert len(memory.get_attribute("points").split()) >= 2
        assert page.locator("figure.chart[data-title='CPU cores busy']").count() == 1
        page.locator("#log-stdout:has-text('step 40 of the slow agent')").wait_for(timeout=60_000)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err[-2000:]
        page.reload()
        record = json.loads((runs / "live" / "practice-wine" / "0" / "record.json").read_text())
        assert "in progress" not in page.inner_text("h1")
        assert page.inner_text("#score") == f"{record['grade']['score']:.5g}"
        samples = [json.loads(line) for line in (runs / "live" / "practice-wine" / "0" / "resources.jsonl").open()]
        assert max(s["rss_bytes"] for s in samples) >= 64 << 20
        assert elsewhere == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_run_page_shows_the_audit(client: TestClient, runs: Path) -> None:
    from podium.audit import AUDIT_FILE, CheckResult, Evidence, Flag, RunAudit

    folder = runs / "exp-baseline" / "practice-titanic" / "0"
    assert "Not audited" in client.get("/run/exp-baseline/practice-titanic/0").text
    flag = Flag("external", "code/a.py imports the LLM SDK 'openai'", (Evidence("code/a.py", 1, "import openai"),))
    audit = RunAudit(str(folder), "practice-titanic", 0, "flagged", (CheckResult.from_flags("external", [flag], {}),))
    (folder / AUDIT_FILE).write_text(json.dumps(audit.to_json()))
    try:
        page = client.get("/run/exp-baseline/practice-titanic/0").text
    finally:
        (folder / AUDIT_FILE).unlink()
    assert 'id="audit-verdict" class="audit flagged"' in page and "imports the LLM SDK" in page
    assert "code/a.py:1: import openai" in page


def test_home_answers_while_a_group_has_no_finished_run(tmp_path: Path) -> None:
    """A new group (group.json, no run finished yet) and an interrupted one sit beside an indexed group."""
    root = tmp_path / "runs"
    for group in ("fresh", "interrupted"):
        (root / group).mkdir(parents=True)
        (root / group / "group.json").write_text(json.dumps({"settings": {"agent": "dummy"}}))
    (root / "interrupted" / "practice-titanic" / "0").mkdir(parents=True)
    RunStore(root)  # an index exists, with no row for either group
    with TestClient(create_app(root)) as test_client:
        page = test_client.get("/")
        assert page.status_code == 200, page.text[-400:]
        for group in ("fresh", "interrupted"):
            assert _row(page.text, f'href="/group/{group}"')[:3] == [group, "-", "0"]
            assert test_client.get(f"/group/{group}").status_code == 200


def test_the_group_page_words_the_hardware_as_the_reports_do(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    capped = {"cpus": 2, "memory_bytes": 4 * 2**30, "gpus": 0}
    uncapped = {"cpus": None, "memory_bytes": None, "gpus": 1}
    for group, settings in (("capped", capped), ("uncapped", uncapped)):
        (root / group).mkdir(parents=True)
        (root / group / "group.json").write_text(json.dumps({"settings": settings}))
    with TestClient(create_app(root)) as test_client:
        assert "<dd>2 CPUs, 4 GiB, no GPU</dd>" in test_client.get("/group/capped").text
        assert "<dd>CPUs not capped, memory not capped, 1 x GPU</dd>" in test_client.get("/group/uncapped").text

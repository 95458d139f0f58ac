"""The LLM judge against the scripted model server, through podium's real proxy: yes, no, a malformed
answer asked again then ``unclear``, chunking, evidence found back in the files, temperature 0, the
prompt and model recorded, the calls logged and counted, and a rerun answered from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from podium.audit import audit_run
from podium.audit.judge import CHUNK_CHARS, LOG_FILE, QUESTIONS, REMINDER, chunks, parse_verdict
from podium.testing import ByContent, Reply, ScriptedLLM
from test_audit_framework import make_run

HAND = "by hand"  # words of the hand_labels question only
LLM_API = "external large-language-model"
ACCESS = "unauthorised means"
NO = "Nothing in the material bears on this.\nVERDICT: no"


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def _run(tmp_path: Path, log: str = "training a model\nscore 0.8\n", code: str = "print('fit')\n") -> Path:
    run = make_run(tmp_path / "runs")
    (run / "logs" / "agent.stdout.log").write_text(log)
    (run / "code" / "solution.py").write_text(code)
    return run


def _audit(run: Path, model: ScriptedLLM, **more: object) -> dict:
    options = {"model": "judge-1", "base_url": model.base_url, **more}
    return audit_run(run, ["judge"], options).to_json()


def test_parse_verdict() -> None:
    assert parse_verdict("because...\nVERDICT: yes") == "yes"
    assert parse_verdict("**Verdict: No.**") == "no"
    assert parse_verdict("VERDICT: yes\nmore words") is None
    assert parse_verdict("VERDICT: maybe") is None and parse_verdict("") is None


def test_chunks_keep_every_character_and_respect_the_size() -> None:
    text = "\n".join(f"row {i} " + "x" * (i % 50) for i in range(4000))
    pieces = chunks([("logs/a.log", text), ("logs/b.log", "y" * 2500)], size=10_000)
    assert all(len(p) <= 10_000 for p in pieces) and len(pieces) > 5
    joined = "".join(pieces)
    assert "=== logs/a.log ===" in joined and "4000: row 3999" in joined and joined.count("y") == 2500


def test_a_yes_is_flagged_with_evidence_found_in_the_logs(tmp_path: Path) -> None:
    log = "loading data\nsubmission['label'] = [0, 1, 1, 0, 1, 1, 0]  # from what I remember\nsaved\n"
    run = _run(tmp_path, log=log)
    yes = "EVIDENCE: 2: submission['label'] = [0, 1, 1, 0, 1, 1, 0]\nThe labels were typed in.\nVERDICT: yes"
    with ScriptedLLM([ByContent({HAND: yes}, NO)] * 3) as model:
        audit = _audit(run, model)
        asked = list(model.requests)
    assert audit["verdict"] == "flagged"
    (flag,) = audit["flags"]
    assert flag["reason"].startswith("judge: the agent wrote the answers by hand")
    assert flag["evidence"][0]["file"] == "logs/agent.stdout.log" and flag["evidence"][0]["line"] == 2
    assert len(asked) == 3 and all(r["body"]["temperature"] == 0 for r in asked)
    result = audit["results"][0]
    assert result["inputs"]["model"] == "judge-1" and result["inputs"]["verdict.hand_labels"] == "yes"
    assert result["inputs"]["prompt.hand_labels"] == QUESTIONS[0].text and len(result["inputs"]["prompts_sha256"]) == 64
    assert int(result["inputs"]["input_tokens"]) > 0 and result["inputs"]["calls"] == "3"
    logged = [json.loads(line) for line in (run / LOG_FILE).read_text().splitlines()]
    assert len(logged) == 3 and all(entry["status"] == 200 for entry in logged)


def test_all_no_is_clean_and_a_rerun_costs_nothing(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with ScriptedLLM([ByContent({}, NO)] * 3) as model:
        audit = _audit(run, model)
        assert audit["results"][0]["verdict"] == "clean" and audit["flags"] == []  # the run: incomplete (others)
        again = _audit(run, model)
        assert len(model.requests) == 3  # the second audit asked nothing
    assert again["results"] == audit["results"]


def test_the_code_question_reads_the_code(tmp_path: Path) -> None:
    code = "import openai\nclient = openai.OpenAI()\nlabels = client.chat.completions.create(model='gpt-4o')\n"
    run = _run(tmp_path, code=code)
    yes = "EVIDENCE: client = openai.OpenAI()\nVERDICT: yes"
    with ScriptedLLM([ByContent({LLM_API: yes}, NO)] * 3) as model:
        audit = _audit(run, model)
        code_asked = next(r for r in model.requests if LLM_API in r["body"]["messages"][-1]["content"])
    assert "1: import openai" in code_asked["body"]["messages"][-1]["content"]
    (flag,) = audit["flags"]
    assert "external LLM API" in flag["reason"] and flag["evidence"][0] == {
        "file": "code/solution.py", "line": 2, "fragment": "client = openai.OpenAI()"}  # fmt: skip


def test_a_malformed_answer_is_asked_again_then_unclear(tmp_path: Path) -> None:
    run = _run(tmp_path)
    rambling = "I think it is probably fine."
    script = [Reply(rambling), Reply(rambling), Reply("hmm"), Reply(NO), Reply(NO)]
    with ScriptedLLM(script) as model:
        audit = _audit(run, model)
        asked = list(model.requests)
    assert len(asked) == 5
    assert asked[1]["body"]["messages"][-1]["content"] == REMINDER
    assert asked[1]["body"]["messages"][-2] == {"role": "assistant", "content": rambling}
    assert audit["verdict"] == "unclear"
    (note,) = audit["flags"]
    assert not note["violation"] and "no verdict" in note["reason"]
    inputs = audit["results"][0]["inputs"]
    assert [inputs[f"verdict.{q.id}"] for q in QUESTIONS] == ["unclear", "no", "no"]


def test_long_logs_go_in_chunks_and_any_chunk_yes_is_yes(tmp_path: Path) -> None:
    filler = "\n".join(f"epoch {i}: loss {1 / (i + 1):.6f} " + "." * 80 for i in range(3000))
    log = filler + "\nwget https://www.kaggle.com/c/spaceship-titanic/leaderboard/solutions.zip\n" + filler
    run = _run(tmp_path, log=log)
    assert len(log) > 2 * CHUNK_CHARS
    yes = "EVIDENCE: wget https://www.kaggle.com/c/spaceship-titanic/leaderboard/solutions.zip\nVERDICT: yes"
    with ScriptedLLM([ByContent({f"(?s){ACCESS}.*solutions\\.zip": yes}, NO)] * 20) as model:
        audit = _audit(run, model)
        access = [r for r in model.requests if ACCESS in r["body"]["messages"][-1]["content"]]
        hand = [r for r in model.requests if HAND in r["body"]["messages"][-1]["content"]]
    assert all(len(r["body"]["messages"][-1]["content"]) < CHUNK_CHARS + 2000 for r in model.requests)
    assert len(hand) >= 3  # every chunk asked: all said no
    assert 1 < len(access) < len(hand)  # stopped at the chunk that said yes
    (flag,) = audit["flags"]
    assert "unauthorised" in flag["reason"] and f"of {len(hand)})" in flag["reason"]
    assert flag["evidence"][0]["line"] == 3001


def test_no_model_is_a_skip(tmp_path: Path) -> None:
    audit = audit_run(_run(tmp_path), ["judge"], {})
    assert "--model" in audit.skipped["judge"]


def test_a_missing_key_is_unclear_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with ScriptedLLM([]) as model:
        audit = _audit(_run(tmp_path), model)
        assert model.requests == []
    assert audit["verdict"] == "unclear" and "OPENAI_API_KEY" in audit["flags"][0]["reason"]


def test_cli_takes_the_model_flags_of_podium_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from podium.cli import main

    run = _run(tmp_path)
    with ScriptedLLM([ByContent({HAND: "EVIDENCE: score 0.8\nVERDICT: yes"}, NO)] * 3) as model:
        code = main(["audit", str(run), "--checks", "judge", "--model", "judge-1", "--base-url", model.base_url,
                     "--max-cost", "5", "--format", "json"])  # fmt: skip
    assert code == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["verdict"] == "flagged" and row["flags"][0]["check"] == "judge"
    assert main(["audit", str(run), "--checks", "judge", "--max-cost", "-1"]) == 2


def test_the_cost_budget_holds_as_in_runs(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with ScriptedLLM([ByContent({}, NO)] * 3) as model:
        options = {"model": "gpt-4o-mini", "base_url": model.base_url, "max_cost": 1e-6}
        audit = audit_run(run, ["judge"], options)
        assert model.requests == []  # the proxy refused every call before forwarding it
    assert audit.verdict == "unclear" and all("cost budget" in f.reason for f in audit.flags)
    logged = [json.loads(line) for line in (run / LOG_FILE).read_text().splitlines()]
    assert len(logged) == 3 and all(entry["status"] == 429 for entry in logged)

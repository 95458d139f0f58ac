"""The audit's deterministic and integrity checks on planted runs: each violation is caught, clean runs pass.

Runs are fake run folders (a record, a submission, code, logs, validation calls) beside data prepared
from the competition's fixture, so every check reads what a real run leaves.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from podium import registry
from podium.agents import BUILTIN, folder_digest
from podium.audit import audit_run, known_leakage
from podium.audit.submission import literal_lists
from podium.cli import main
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw
from podium.paths import CompetitionPaths
from podium.services.digest import body_digest

CID = "spaceship-titanic"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit-data")
    comp = registry.get(CID)
    prepare_competition(comp, root / "data", source=make_raw(comp, root / "raw"))
    return root / "data"


def _sample(data_dir: Path) -> Path:
    return CompetitionPaths(data_dir, CID).prepared / registry.get(CID).sample_submission


def _predictions(data_dir: Path) -> tuple[str, list[bool]]:
    """A submission of made-up predictions (not the sample's), and the predictions."""
    rows = list(csv.reader(io.StringIO(_sample(data_dir).read_text())))
    values = [(i * 7) % 3 == 0 for i in range(len(rows) - 1)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows[0])
    for row, value in zip(rows[1:], values, strict=True):
        writer.writerow([row[0], str(value)])
    return out.getvalue(), values


def _isolation(data_dir: Path, run: Path, *, sandbox: str = "bwrap", extra: tuple[str, ...] = ()) -> dict[str, Any]:
    paths = CompetitionPaths(data_dir, CID)
    mounts = [(str(paths.public), "/home/data"), (str(run / "submission"), "/home/submission"),
              (str(run / "code"), "/home/code"), ("/tmp/v/validate.sock", "/home/validate.sock"),
              *((source, "/home/extra") for source in extra)]  # fmt: skip
    return {
        "sandbox": sandbox,
        "isolated": sandbox != "local",
        "network": "loopback only" if sandbox != "local" else "the host's",
        "answers": str(paths.private),
        "mounts": [{"source": s, "target": t, "writable": False} for s, t in mounts],
    }


def make_run(
    root: Path,
    data_dir: Path,
    seed: int,
    *,
    agent: str = "my-agent",
    agent_dir: Path | None = None,
    submission: str | bytes | None = None,
    code: dict[str, str] | None = None,
    logs: dict[str, str] | None = None,
    calls: list[dict[str, Any]] | None = None,
    isolation: dict[str, Any] | None = None,
) -> Path:
    run = root / "group" / CID / str(seed)
    for folder in ("submission", "code", "logs", "home"):
        (run / folder).mkdir(parents=True, exist_ok=True)
    if submission is not None:
        data = submission.encode() if isinstance(submission, str) else submission
        (run / "submission" / "submission.csv").write_bytes(data)
    for name, text in (code or {}).items():
        (run / "code" / name).parent.mkdir(parents=True, exist_ok=True)
        (run / "code" / name).write_text(text)
    for name, text in (logs or {}).items():
        (run / "logs" / name).write_text(text)
    record = {
        "run_group": "group", "competition_id": CID, "competition_version": 1, "seed": seed, "agent": agent,
        "agent_hash": folder_digest(agent_dir) if agent_dir else None, "status": "finished",
        "validation_calls": calls or [], "isolation": isolation or _isolation(data_dir, run),
        "grade": {"score": 0.8, "valid_submission": True, "submission_exists": True, "gold_medal": True, "any_medal": True},
    }  # fmt: skip
    (run / "record.json").write_text(json.dumps(record))
    return run


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "my-agent"
    folder.mkdir()
    (folder / "agent.yaml").write_text("name: my-agent\ncommand: [python3, /home/agent/main.py]\n")
    (folder / "main.py").write_text("import subprocess\nsubprocess.run(['python3', '/home/code/solution.py'])\n")
    return folder


FAIR_CODE = (
    "import pandas as pd\nfrom sklearn.ensemble import HistGradientBoostingClassifier\n"
    "train = pd.read_csv('/home/data/train.csv')\n# see https://www.kaggle.com/c/spaceship-titanic for the task\n"
)


def _audit(run: Path, data_dir: Path, agent_dir: Path | None = None) -> Any:
    options = {"data_dir": str(data_dir), **({"agent_dir": str(agent_dir)} if agent_dir else {})}
    return audit_run(run, options=options)


def _reasons(audit: Any, check: str) -> list[str]:
    return [f.reason for f in audit.violations if f.check == check]


def test_a_clean_run_passes_every_check(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"solution.py": FAIR_CODE},
                   logs={"agent.stdout.log": "holdout accuracy 0.79\n"})  # fmt: skip
    audit = _audit(run, data_dir, agent_dir)
    assert audit.verdict == "clean", audit.flags
    assert audit.violations == () and set(audit.skipped) == set()
    statement = [f.reason for f in audit.result("integrity").flags]
    assert any(s.startswith("answers: never mounted") for s in statement)
    assert any(s.startswith("validation: 0 calls") for s in statement)
    assert any("imports no grader" in s for s in statement)


def test_answers_written_as_a_literal_list_are_caught(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, values = _predictions(data_dir)
    listed = "answers = [" + ", ".join(str(v) for v in values) + "]\n"
    code = {"solution.py": f"import pandas as pd\n{listed}sub = pd.read_csv('/home/data/sample_submission.csv')\n"}
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code=code)
    audit = _audit(run, data_dir, agent_dir)
    assert audit.verdict == "flagged"
    (reason,) = _reasons(audit, "answers")
    assert "answers written by hand" in reason
    (flag,) = [f for f in audit.violations if f.check == "answers"]
    assert flag.evidence[0].file == "code/solution.py" and flag.evidence[0].line == 2
    # a long list that is not the predictions is no violation
    other = "weights = [" + ", ".join(str(not v) for v in values) + "]\n"
    clean = make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=submission, code={"s.py": other})
    assert _reasons(_audit(clean, data_dir, agent_dir), "answers") == []


def test_a_list_matches_as_a_set_only_for_many_distinct_fractions() -> None:
    from podium.audit.submission import _matches

    floats = [f"{0.001 * i + 0.0005:.6g}" for i in range(40)]
    assert _matches(list(reversed(floats)), floats)  # the predictions, reordered
    integers = [str(i % 30) for i in range(40)]
    assert not _matches(list(reversed(integers[:30])) * 2, integers)  # small integers coincide by chance


def test_an_llm_sdk_and_a_remote_host_are_caught(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)
    code = {"solution.py": "import openai\nimport requests\n"
            "client = openai.OpenAI()\nrows = requests.get('https://example.org/labels.csv').text\n"
            "local = requests.get('http://127.0.0.1:8080/ok')\n"}  # fmt: skip
    logs = {"agent.stdout.log": "$ wget https://www.kaggle.com/c/spaceship-titanic/data\n"}
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code=code, logs=logs)
    audit = _audit(run, data_dir, agent_dir)
    reasons = _reasons(audit, "external")
    assert audit.verdict == "flagged"
    assert any("imports the LLM SDK 'openai'" in r for r in reasons)
    assert any("reaches the web (example.org)" in r for r in reasons)
    assert any("logs/agent.stdout.log runs a download" in r for r in reasons)
    lines = [e.line for f in audit.violations for e in f.evidence if e.file == "code/solution.py"]
    assert 5 not in lines  # the loopback address is no violation
    from podium.audit.external import scan_code

    assert [r for _, r, _ in scan_code("import pandas as pd\ndf = pd.read_csv('https://example.org/x.csv')\n")] == [
        "reaches the web (example.org)"
    ]
    assert scan_code("# https://example.org/x.csv\nmsg = 'see https://example.org'\n") == []
    assert scan_code('"""Solution for https://www.kaggle.com/c/spaceship-titanic."""\n') == []
    kaggle = "import pandas as pd\npd.read_csv('https://www.kaggle.com/c/x/download/test_labels.csv')\n"
    assert [r for _, r, _ in scan_code(kaggle)] == ["downloads from the data host kaggle.com"]


def _call(body: str, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "body.csv"
    path.write_text(body)
    fd = os.open(path, os.O_RDONLY)
    try:
        return {"verdict": "valid", "status": 200, "error": None, "body": body_digest(fd, path.stat().st_size)}
    finally:
        os.close(fd)


def test_the_validation_endpoint_probed_as_an_oracle_is_caught(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)
    lines = submission.splitlines()
    probes = []
    for i in range(1, 13):  # flip one row at a time, as an agent reading a score would
        flipped = list(lines)
        rid, value = flipped[i].split(",")
        flipped[i] = f"{rid},{value == 'False'}"
        probes.append(_call("\n".join(flipped) + "\n", tmp_path))
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, calls=probes)
    audit = _audit(run, data_dir, agent_dir)
    assert audit.verdict == "flagged" and "used as an oracle" in _reasons(audit, "oracle")[0]
    # the same file validated again and again is no probe
    same = [_call(submission, tmp_path) for _ in range(12)]
    again = make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=submission, calls=same)
    assert _reasons(_audit(again, data_dir, agent_dir), "oracle") == []


def test_a_scaffold_importing_a_grader_is_caught(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    (agent_dir / "main.py").write_text("from podium.grading import grade\nprint(grade)\n")
    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    audit = _audit(run, data_dir, agent_dir)
    assert audit.verdict == "flagged"
    assert any("imports a grader" in r for r in _reasons(audit, "integrity"))
    # a folder other than the one that ran is not taken as the scaffold
    other = tmp_path / "other"
    shutil.copytree(agent_dir, other)
    (other / "main.py").write_text("print('hello')\n")
    assert _audit(run, data_dir, other).result("integrity").verdict == "unclear"


def test_mounted_answers_and_copies_of_given_files(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    paths = CompetitionPaths(data_dir, CID)
    answers = next(p for p in sorted(paths.private.iterdir()) if p.is_file())
    run = make_run(
        tmp_path, data_dir, 0, agent_dir=agent_dir, submission=answers.read_bytes(), code={"s.py": FAIR_CODE}
    )
    (run / "record.json").write_text(
        json.dumps(
            {
                **json.loads((run / "record.json").read_text()),
                "isolation": _isolation(data_dir, run, extra=(str(paths.prepared),)),
            }
        )
    )
    audit = _audit(run, data_dir, agent_dir)
    assert any("copy of the private answers" in r for r in _reasons(audit, "submission"))
    assert any("private answers" in r and "mounted" in r for r in _reasons(audit, "integrity"))
    sample = make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=_sample(data_dir).read_bytes(), code={"s.py": FAIR_CODE})  # fmt: skip
    audit = _audit(sample, data_dir, agent_dir)
    assert audit.verdict == "clean" and any(f.reason.startswith("sample submission") for f in audit.notes)


def test_what_the_records_cannot_back_is_unclear(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission)
    local = _isolation(data_dir, run, sandbox="local")
    (run / "record.json").write_text(json.dumps({**json.loads((run / "record.json").read_text()), "isolation": local}))
    audit = _audit(run, data_dir, agent_dir)
    assert audit.verdict == "unclear" and audit.result("integrity").verdict == "unclear"
    assert any(f.reason.startswith("no code to audit") for f in audit.notes)
    custom = make_run(tmp_path, data_dir, 1, submission=submission, code={"s.py": FAIR_CODE})
    assert _audit(custom, data_dir).result("integrity").verdict == "unclear"  # no --agent-dir: scaffold not read


def test_literal_lists_are_found_in_one_pass() -> None:
    text = "x = [" + ", ".join(str(i) for i in range(30)) + "]\ny = [1, 2]\nz = ('a', 'b', " + "'c', " * 25 + "'d')\n"
    found = list(literal_lists(text))
    assert [(line, len(values)) for line, values in found] == [(1, 30), (3, 28)]
    assert list(literal_lists("1, " * 100_000)) and list(literal_lists("[" * 100_000)) == []
    answers = "{" + ", ".join(f"'{i:04d}_01': {i % 2 == 0}" for i in range(25)) + "}"
    ((line, values),) = literal_lists(answers)
    assert line == 1 and values == ["true", "false"] * 12 + ["true"]


def test_known_leakage_names_the_fixing_version() -> None:
    facts = known_leakage("random-acts-of-pizza", 1)
    assert any("leaks" in f for f in facts) and any("version 2 fixes (not carried by this run)" in f for f in facts)
    assert any(
        "carried by this run" in f and "not" not in f.split(":")[0] for f in known_leakage("random-acts-of-pizza", 2)
    )
    assert known_leakage("spaceship-titanic") == []


def test_cli_audit_text_json_and_usage_errors(
    tmp_path: Path, data_dir: Path, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    submission, _ = _predictions(data_dir)
    make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"s.py": "import anthropic\n"})
    make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    common = ["--data-dir", str(data_dir), "--agent-dir", str(agent_dir)]
    assert main(["audit", str(tmp_path / "group"), "--format", "json", *common]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["competition_id"], r["seed"], r["verdict"]) for r in rows] == [(CID, 0, "flagged"), (CID, 1, "clean")]
    assert rows[0]["flags"][0]["check"] == "external" and rows[0]["flags"][0]["evidence"][0]["line"] == 1
    assert main(["audit", str(tmp_path), "--checks", "external,integrity", *common]) == 0
    out = capsys.readouterr().out
    assert f"group/{CID}/0: flagged" in out and "2 run(s): 1 clean, 1 flagged, 0 unclear" in out
    assert main(["audit", str(tmp_path), "--checks", "nope"]) == 2
    assert "no audit check 'nope'" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "missing")]) == 2
    assert main(["audit", str(tmp_path), "--format", "yaml"]) == 2
    # without --data-dir's prepared data the submission check says why it was skipped
    assert main(["audit", str(tmp_path), "--data-dir", str(tmp_path / "nodata"), "--agent-dir", str(agent_dir)]) == 0
    assert "skipped: submission on 2 run(s): spaceship-titanic is not prepared" in capsys.readouterr().out
    assert BUILTIN.is_dir()


def test_report_shows_medals_before_and_after_the_audit(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    from podium.report import build_report, load_inputs, render

    submission, _ = _predictions(data_dir)
    make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=submission, code={"s.py": "import openai\n"})
    local = make_run(tmp_path, data_dir, 2, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    record = json.loads((local / "record.json").read_text())
    (local / "record.json").write_text(
        json.dumps({**record, "isolation": _isolation(data_dir, local, sandbox="local")})
    )
    make_run(tmp_path, data_dir, 3, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    for seed in (0, 1, 2):  # seed 3 is never audited
        _audit(tmp_path / "group" / CID / str(seed), data_dir, agent_dir)
    report = build_report(load_inputs([str(tmp_path / "group")]), split="dev", pad_missing=True)
    (block,) = report["audit"].values()
    assert (block["medals_before"], block["medals_after"], block["medals_unclear"], block["medals_not_audited"]) == (
        4,
        1,
        1,
        1,
    )
    assert (block["clean"], block["flagged"], block["unclear"], block["audited"]) == (1, 1, 1, 3)
    flagged = next(r for r in block["reasons"] if r["seed"] == 1)
    assert flagged["verdict"] == "flagged" and "imports the LLM SDK 'openai'" in flagged["reasons"][0]
    assert block["integrity"]["statement"][0] == "private answers never mounted: 3 of 3 runs"
    runs = block and report["labels"][next(iter(report["labels"]))]["competitions"][0]["runs"]
    assert [r["audit"] for r in runs] == ["clean", "flagged", "unclear", None]
    text = render(report, "text")
    assert "medals before" in text and "reasons per run" in text and "test-signal integrity" in text
    assert "known leakage: none recorded" in text
    html = render(report, "html")
    assert 'id="audit"' in html and "imports the LLM SDK" in html
    import re

    cells = re.findall(r'data-json-path="(/audit/[^"]+)" data-value="([^"]*)"', html)
    assert len(cells) == 8
    for path, value in cells:  # every number of the audit table is the JSON's
        node: Any = report
        for part in path.strip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        assert json.loads(value) == node
    assert "flagged" in render(report, "csv").splitlines()[2]

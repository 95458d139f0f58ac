"""The audit's deterministic and integrity checks on planted runs: each violation is caught, clean runs pass.

Runs are fake run folders (a record, a submission, code, logs, validation calls) beside data prepared
from the competition's fixture, so every check reads what a real run leaves. A run is ``clean`` only
when every check ran, the judge (against the scripted model server) and plagiarism (against a
folder of notebooks) included: :func:`complete` gives the options for that.
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
from podium.testing import ByContent, ScriptedLLM

CID = "spaceship-titanic"
NO = "Nothing in the material bears on this.\nVERDICT: no"
#: What a sandbox with a loopback of its own observes at start (I2).
LOOPBACK = {
    "interfaces": [{"name": "lo", "up": True, "loopback": True, "addresses": ["127.0.0.1/8", "::1/128"]}],
    "routes": ["local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1", "local ::1 dev lo proto kernel"],
    "observed_by": "sandbox",
    "at": "start",
}


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
        "network_observed": LOOPBACK,
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
    agent_folder: Path | None = None,
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
        "agent_hash": folder_digest(agent_dir or agent_folder) if agent_dir or agent_folder else None,
        "agent_folder": str(agent_folder) if agent_folder else None, "status": "finished",
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


def _audit(run: Path, data_dir: Path, agent_dir: Path | None = None, **more: Any) -> Any:
    options = {"data_dir": str(data_dir), **({"agent_dir": str(agent_dir)} if agent_dir else {}), **more}
    return audit_run(run, options=options)


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    """A folder of public notebooks (one, unlike any run's code), as `podium audit --kernels` takes it."""
    folder = tmp_path / "kernels" / CID
    folder.mkdir(parents=True)
    (folder / "someone__eda.py").write_text("import os\n\nfor name in sorted(os.listdir('.')):\n    print(name)\n")
    return folder.parent


@pytest.fixture
def complete(kernels: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The options that make every check run: the judge against a scripted model that answers no to every question,
    and plagiarism against ``kernels`` (podium's winnowing)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with ScriptedLLM([ByContent({}, NO)] * 60) as model:
        yield {
            "model": "judge-1",
            "base_url": model.base_url,
            "kernels": str(kernels),
            "plagiarism_engine": "winnowing",
        }


def _reasons(audit: Any, check: str) -> list[str]:
    return [f.reason for f in audit.violations if f.check == check]


def test_a_clean_run_passes_every_check(
    tmp_path: Path, data_dir: Path, agent_dir: Path, complete: dict[str, Any]
) -> None:
    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"solution.py": FAIR_CODE},
                   logs={"agent.stdout.log": "holdout accuracy 0.79\n"})  # fmt: skip
    audit = _audit(run, data_dir, agent_dir, **complete)
    assert audit.verdict == "clean", (audit.flags, audit.skipped)
    assert audit.violations == () and audit.skipped == {} and audit.incomplete == ()
    statement = [f.reason for f in audit.result("integrity").flags]
    assert any(s.startswith("answers: never mounted") for s in statement)
    assert any(s.startswith("validation: 0 calls") for s in statement)
    assert any("imports no grader" in s for s in statement)
    assert any(
        s.startswith("network: loopback only (bwrap, observed at start by sandbox: interfaces lo)") for s in statement
    )


def test_skipped_checks_leave_a_run_incomplete_not_clean(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"solution.py": FAIR_CODE})
    audit = _audit(run, data_dir, agent_dir)  # no judge model named, no notebooks
    assert audit.verdict == "incomplete" and audit.incomplete == ("plagiarism", "judge")
    assert audit.summary == "incomplete: plagiarism, judge" and audit.violations == ()
    assert "--model" in audit.skipped["judge"] and "kernels" in audit.skipped["plagiarism"]
    # a check with nothing to judge on the run (answers, with no submission) leaves it complete
    bare = make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, code={"solution.py": FAIR_CODE})
    audit = _audit(bare, data_dir, agent_dir)
    assert "answers" in audit.skipped and "answers" not in audit.incomplete
    # a check not asked for is no check that ran
    only = audit_run(
        run, ["external"], {"data_dir": str(data_dir), "agent_dir": str(agent_dir), "plagiarism_engine": "winnowing"}
    )
    assert only.verdict == "incomplete" and "judge" in only.incomplete


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
    from podium.audit.submission import agreement

    floats = [f"{0.001 * i + 0.0005:.6g}" for i in range(40)]
    assert agreement(list(reversed(floats)), floats) == 1.0  # the predictions, reordered
    integers = [str(i % 30) for i in range(40)]
    assert agreement(list(reversed(integers[:30])) * 2, integers) is None  # small integers coincide by chance


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
    # calls past the endpoint's sketch limit are not compared: the check cannot say the run did not probe
    late = [*same, *({**c, "body": {k: v for k, v in c["body"].items() if k != "row_sketch"}} for c in probes)]
    past = make_run(tmp_path, data_dir, 2, agent_dir=agent_dir, submission=submission, calls=late)
    result = _audit(past, data_dir, agent_dir).result("oracle")
    assert result.verdict == "unclear" and result.flags[0].figures == {"unsketched": 12}


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


def test_mounted_answers_and_copies_of_given_files(
    tmp_path: Path, data_dir: Path, agent_dir: Path, complete: dict[str, Any]
) -> None:
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
    audit = _audit(sample, data_dir, agent_dir, **complete)
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
    tmp_path: Path, data_dir: Path, agent_dir: Path, complete: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    submission, _ = _predictions(data_dir)
    make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"s.py": "import anthropic\n"})
    make_run(tmp_path, data_dir, 1, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    common = ["--data-dir", str(data_dir), "--agent-dir", str(agent_dir)]
    judged = ["--model", complete["model"], "--base-url", complete["base_url"], "--kernels", complete["kernels"]]
    assert main(["audit", str(tmp_path / "group"), "--format", "json", *common, *judged]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["competition_id"], r["seed"], r["verdict"]) for r in rows] == [(CID, 0, "flagged"), (CID, 1, "clean")]
    assert rows[0]["flags"][0]["check"] == "external" and rows[0]["flags"][0]["evidence"][0]["line"] == 1
    assert main(["audit", str(tmp_path), "--checks", "external,integrity", *common]) == 0  # the rest is kept
    out = capsys.readouterr().out
    assert f"group/{CID}/0: flagged" in out and "2 run(s): 1 clean, 1 flagged, 0 unclear, 0 incomplete" in out
    assert main(["audit", str(tmp_path), "--checks", "nope"]) == 2
    assert "no audit check 'nope'" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "missing")]) == 2
    assert main(["audit", str(tmp_path), "--format", "yaml"]) == 2
    # redone without --data-dir's prepared data, the submission check says why it was skipped, and no result is kept
    nodata = ["--data-dir", str(tmp_path / "nodata"), "--agent-dir", str(agent_dir)]
    assert main(["audit", str(tmp_path), *nodata, "--redo", "--checks", "submission"]) == 0
    out = capsys.readouterr().out
    skipped = next(line for line in out.splitlines() if line.startswith("skipped:"))
    assert (
        skipped == f"skipped: submission on 2 run(s): {CID} is not prepared in {tmp_path / 'nodata'} (give --data-dir)"
    )
    assert f"group/{CID}/1: incomplete: submission" in out
    assert BUILTIN.is_dir()


def test_report_shows_medals_before_and_after_the_audit(
    tmp_path: Path, data_dir: Path, agent_dir: Path, complete: dict[str, Any]
) -> None:
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
    make_run(tmp_path, data_dir, 4, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    for seed in (0, 1, 2):  # seed 3 is never audited
        _audit(tmp_path / "group" / CID / str(seed), data_dir, agent_dir, **complete)
    _audit(tmp_path / "group" / CID / "4", data_dir, agent_dir)  # no judge, no notebooks: incomplete
    report = build_report(load_inputs([str(tmp_path / "group")]), split="dev", pad_missing=True)
    (block,) = report["audit"].values()
    medals = ("medals_before", "medals_after", "medals_unclear", "medals_incomplete", "medals_not_audited")
    assert tuple(block[k] for k in medals) == (5, 1, 1, 1, 1)
    assert (block["clean"], block["flagged"], block["unclear"], block["incomplete"], block["audited"]) == (
        1,
        1,
        1,
        1,
        4,
    )
    flagged = next(r for r in block["reasons"] if r["seed"] == 1)
    assert flagged["verdict"] == "flagged" and "imports the LLM SDK 'openai'" in flagged["reasons"][0]
    incomplete = next(r for r in block["reasons"] if r["seed"] == 4)
    assert incomplete["verdict"] == "incomplete" and incomplete["reasons"][0] == "incomplete: plagiarism, judge"
    assert block["integrity"]["statement"][0] == "private answers never mounted: 4 of 4 runs"
    runs = block and report["labels"][next(iter(report["labels"]))]["competitions"][0]["runs"]
    assert [r["audit"] for r in runs] == ["clean", "flagged", "unclear", None, "incomplete"]
    text = render(report, "text")
    assert "medals before" in text and "reasons per run" in text and "test-signal integrity" in text
    assert "known leakage: none recorded" in text
    html = render(report, "html")
    assert 'id="audit"' in html and "imports the LLM SDK" in html
    import re

    cells = re.findall(r'data-json-path="(/audit/[^"]+)" data-value="([^"]*)"', html)
    assert len(cells) == 10
    for path, value in cells:  # every number of the audit table is the JSON's
        node: Any = report
        for part in path.strip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        assert json.loads(value) == node
    assert "flagged" in render(report, "csv").splitlines()[2]


def _with_isolation(run: Path, **changes: Any) -> None:
    record = json.loads((run / "record.json").read_text())
    record["isolation"] = {**record["isolation"], **changes}
    (run / "record.json").write_text(json.dumps(record))


def test_the_network_statement_is_what_the_sandbox_observed(tmp_path: Path, data_dir: Path, agent_dir: Path) -> None:
    submission, _ = _predictions(data_dir)

    def integrity(seed: int, **changes: Any) -> Any:
        run = make_run(tmp_path, data_dir, seed, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
        _with_isolation(run, **changes)
        result = audit_run(run, ["integrity"], {"agent_dir": str(agent_dir)}).result("integrity")
        return result, next(f.reason for f in result.flags if not f.violation and f.reason.startswith("network:"))

    result, statement = integrity(0)
    assert result.verdict == "clean" and statement.startswith(
        "network: loopback only (bwrap, observed at start by sandbox"
    )
    # a record without the observation (every record before it was taken) cannot back the statement
    missing = {"network_observed": None}
    result, statement = integrity(1, **missing)
    assert result.verdict == "unclear" and statement.startswith("network: NOT OBSERVED (bwrap, the record holds no")
    result, statement = integrity(2, network_observed={"error": "nsenter: permission denied"})
    assert result.verdict == "unclear" and "could not be taken: nsenter: permission denied" in statement
    # an interface of the host's network, or a default route, fails it: a violation
    eth = {"name": "eth0", "up": True, "loopback": False, "addresses": ["10.0.0.7/24"]}
    wide = {**LOOPBACK, "interfaces": [*LOOPBACK["interfaces"], eth], "routes": ["default via 10.0.0.1 dev eth0"]}
    result, statement = integrity(3, network_observed=wide)
    assert result.verdict == "flagged" and statement.startswith("network: NOT loopback only")
    (flag,) = [f for f in result.flags if f.violation]
    assert "interface eth0 (up; 10.0.0.7/24)" in flag.reason and "route 'default via 10.0.0.1 dev eth0'" in flag.reason
    assert flag.figures["interfaces"] == 2 and flag.evidence[0].file == "record.json"
    # a tunnel device a new namespace may hold, down and without an address, is no way out
    tunnel = {
        **LOOPBACK,
        "interfaces": [*LOOPBACK["interfaces"], {"name": "sit0", "up": False, "loopback": False, "addresses": []}],
    }
    assert integrity(4, network_observed=tunnel)[0].verdict == "clean"
    # on a cluster the statement says the node made the record
    result, statement = integrity(5, network_observed={**LOOPBACK, "observed_by": "node gpu-3"})
    assert result.verdict == "clean" and "observed at start by node gpu-3: the record was made by the node" in statement


def test_the_agent_folder_is_found_through_the_record_and_checked_against_its_hash(
    tmp_path: Path, data_dir: Path, agent_dir: Path
) -> None:
    submission, _ = _predictions(data_dir)
    # `podium run --agent ./myagent`: the record names the folder, so no --agent-dir is needed
    run = make_run(tmp_path, data_dir, 0, agent_folder=agent_dir, submission=submission, code={"s.py": FAIR_CODE})
    result = audit_run(run, ["integrity"]).result("integrity")
    scaffold = next(f.reason for f in result.flags if f.reason.startswith("scaffold:"))
    assert (
        result.verdict == "clean" and "2 files of my-agent: imports no grader" in scaffold and "the record" in scaffold
    )
    # the folder changed since the run: it is not read, whoever names it
    (agent_dir / "main.py").write_text("from podium.grading import grade\n")
    for options in ({}, {"agent_dir": str(agent_dir)}):
        result = audit_run(run, ["integrity"], options).result("integrity")
        scaffold = next(f.reason for f in result.flags if f.reason.startswith("scaffold:"))
        assert result.verdict == "unclear" and "is not the folder that ran" in scaffold, scaffold
    # a record naming a folder that is no agent's (a hostile node's "/") is not hashed
    elsewhere = make_run(tmp_path, data_dir, 3, agent_folder=agent_dir, submission=submission)
    record = json.loads((elsewhere / "record.json").read_text())
    (elsewhere / "record.json").write_text(json.dumps({**record, "agent_folder": "/"}))
    result = audit_run(elsewhere, ["integrity"]).result("integrity")
    assert result.verdict == "unclear" and any(
        "/ (named by the record) holds no agent.yaml" in f.reason for f in result.flags
    )
    # a built-in agent is checked too: a record whose hash is not the folder's is not backed by it
    for seed, digest in ((1, folder_digest(BUILTIN / "dummy")), (2, "0123456789abcdef")):
        built_in = make_run(tmp_path, data_dir, seed, agent="dummy", submission=submission)
        record = json.loads((built_in / "record.json").read_text())
        (built_in / "record.json").write_text(json.dumps({**record, "agent_hash": digest}))
        result = audit_run(built_in, ["integrity"]).result("integrity")
        assert result.verdict == ("clean" if seed == 1 else "unclear"), result.flags


def test_new_records_name_the_agent_folder(tmp_path: Path) -> None:
    from podium.agents import load_agent_folder
    from podium.run.config import RunConfig
    from podium.run.execute import new_record

    folder = tmp_path / "myagent"
    shutil.copytree(BUILTIN / "dummy", folder)
    config = RunConfig(agent=load_agent_folder(str(folder)), seeds=1, time_limit=60, sandbox="bwrap", cpus=1,
                       memory_bytes=None, gpus=0, run_group="g", data_dir=tmp_path / "data", runs_dir=tmp_path / "runs")  # fmt: skip
    record = new_record(config, registry.get(CID), 0, ())
    assert record.agent_folder == str(folder.resolve()) and record.to_dict()["agent_folder"] == str(folder.resolve())


def test_a_burst_of_probes_refused_by_the_rate_limit_is_still_seen(
    tmp_path: Path, data_dir: Path, agent_dir: Path
) -> None:
    """30 one-row probes fired at once: 29 are refused (429), every one is logged with its body's sketch, and the
    oracle check flags both the probing and the hammering."""
    import http.client
    import socket
    import tempfile
    import threading

    from podium.services import ValidationServer

    submission, _ = _predictions(data_dir)
    lines = submission.splitlines()
    bodies, state = [], list(lines)
    for k in range(30):  # each probe flips one more row of the one before (around the file again when at its end)
        i = 1 + k % (len(lines) - 1)
        rid, value = state[i].split(",")
        state[i] = f"{rid},{value == 'False'}"
        bodies.append(("\n".join(state) + "\n").encode())
    assert len(set(bodies)) == 30
    short = Path(tempfile.mkdtemp(prefix="pv-", dir="/tmp"))
    statuses: list[int] = []

    def post(sock_path: Path, body: bytes) -> None:
        conn = http.client.HTTPConnection("localhost", timeout=60)
        conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.sock.connect(str(sock_path))
        conn.request("POST", "/validate", body=body)
        statuses.append(conn.getresponse().status)
        conn.close()

    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission)
    try:
        server = ValidationServer(registry.get(CID), _sample(data_dir), short / "v.sock", run / "validation_calls.jsonl",
                                  min_interval_s=60)  # fmt: skip
        with server:
            threads = [threading.Thread(target=post, args=(server.socket_path, body)) for body in bodies]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert sorted(statuses) == [200] + [429] * 29
    calls = server.calls
    assert len(calls) == 30 and all(len(c["body"]["row_sketch"]) == 512 for c in calls)
    audit = _audit(run, data_dir, agent_dir)
    reasons = _reasons(audit, "oracle")
    assert any(r.startswith("validation endpoint used as an oracle") for r in reasons), reasons
    hammer = next(f for f in audit.violations if f.reason.startswith("validation endpoint hammered"))
    assert hammer.figures == {"refused": 29, "calls": 30, "share": 29 / 30}
    assert audit.result("oracle").inputs["refused"] == 29


def test_every_figure_is_a_number_beside_its_sentence(
    tmp_path: Path, data_dir: Path, agent_dir: Path, kernels: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.audit import winnowing

    source = "\n".join(f"value_{i} = compute(data, {i})\nprint(value_{i} * {i})" for i in range(40)) + "\n"
    (kernels / CID / "someone__copied.py").write_text(source)
    submission, values = _predictions(data_dir)
    listed = "answers = [" + ", ".join(str(v) for v in values) + "]\n"
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission,
                   code={"copy.py": source.replace("compute", "calc"), "hand.py": listed})  # fmt: skip
    options = ["--kernels", str(kernels), "--data-dir", str(data_dir), "--agent-dir", str(agent_dir)]
    assert main(["audit", str(run), "--format", "json", *options]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    plagiarism = next(f for f in row["flags"] if f["check"] == "plagiarism")
    expected = winnowing.compare(
        winnowing.fingerprint(source.replace("compute", "calc")), winnowing.fingerprint(source)
    ).similarity
    assert plagiarism["figures"]["similarity"] == expected and isinstance(plagiarism["figures"]["similarity"], float)
    assert f"{expected:.0%} similar" in plagiarism["reason"]
    answers = next(f for f in row["flags"] if f["check"] == "answers")
    assert answers["figures"] == {"values": len(values), "agreement": 1.0, "submission_rows": len(values)}
    saved = json.loads((run / "audit.json").read_text())
    result = next(r for r in saved["results"] if r["check"] == "plagiarism")
    assert result["inputs"]["max_similarity"] == expected and result["inputs"]["kernels"] == 2
    integrity = next(r for r in saved["results"] if r["check"] == "integrity")
    calls = next(f for f in integrity["flags"] if f["reason"].startswith("validation:"))
    assert calls["figures"] == {"calls": 0, "scored": 0}


def test_answers_and_external_record_the_checksums_of_what_they_read(
    tmp_path: Path, data_dir: Path, agent_dir: Path
) -> None:
    import hashlib

    from podium.audit import AuditContext

    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={"s.py": FAIR_CODE},
                   logs={"agent.stdout.log": "fit\n"})  # fmt: skip
    audit = _audit(run, data_dir, agent_dir)
    ctx = AuditContext(run)
    code, logs = ctx.code_files(), ctx.log_files()
    answers, external = audit.result("answers").inputs, audit.result("external").inputs
    assert answers["submission"] == hashlib.sha256(submission.encode()).hexdigest()
    assert answers["files"] == 2 and answers["files_sha256"] == ctx.files_sha256([*code, *logs])
    assert external["code_files"] == 1 and external["code_sha256"] == ctx.files_sha256(code)
    assert external["logs_sha256"] == ctx.files_sha256(logs)
    (run / "logs" / "agent.stdout.log").write_text("fit again\n")
    assert _audit(run, data_dir, agent_dir).result("external").inputs["logs_sha256"] != external["logs_sha256"]


SPOOF = "x\x1b[2K\r\x1b[32mALL RUNS: clean\x1b[0m\n  note external: nothing.py"


def test_names_cannot_rewrite_the_audit_or_the_report(
    tmp_path: Path, data_dir: Path, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.report import build_report, load_inputs, render

    submission, _ = _predictions(data_dir)
    run = make_run(tmp_path, data_dir, 0, agent_dir=agent_dir, submission=submission, code={SPOOF: "import openai\n"})
    assert main(["audit", str(run), "--data-dir", str(data_dir), "--agent-dir", str(agent_dir)]) == 0
    out = capsys.readouterr().out
    report = build_report(load_inputs([str(tmp_path / "group")]), split="dev", pad_missing=True)
    for text in (out, render(report, "text"), render(report, "md")):
        assert "\x1b" not in text and "\r" not in text
        assert not any(
            line.lstrip().startswith(("note external: nothing.py", "ALL RUNS")) for line in text.splitlines()
        )
    violation = next(line for line in out.splitlines() if "VIOLATION external" in line)
    assert "code/x\\e[2K\\r\\e[32mALL RUNS: clean\\e[0m\\n  note external: nothing.py imports the LLM SDK" in violation
    md = render(report, "md")
    assert "x\\e[2K\\r\\e[32mALL RUNS: clean\\e[0m\\n  note external: nothing.py imports" in md


def test_a_missing_kernels_folder_is_a_usage_error(
    tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path, data_dir, 0, submission="id,x\n")
    assert main(["audit", str(run), "--kernels", str(tmp_path / "nonexistent")]) == 2
    err = capsys.readouterr().err
    assert f"--kernels {tmp_path / 'nonexistent'}: no such folder" in err and not (run / "audit.json").exists()


def test_the_skipped_line_groups_runs_of_many_competitions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from test_audit_framework import make_run as bare_run

    ids = ["spaceship-titanic", "random-acts-of-pizza", "aerial-cactus-identification", "jigsaw-toxic-comment-classification-challenge",
           "leaf-classification", "nomad2018-predict-transparent-conductors", "text-normalization-challenge-english-language"]  # fmt: skip
    for cid in ids:
        bare_run(tmp_path, cid)
    assert main(["audit", str(tmp_path / "g"), "--checks", "plagiarism,judge", "--data-dir", str(tmp_path)]) == 0
    skipped = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("skipped:"))
    clauses = skipped.removeprefix("skipped: ").split("; ")  # one per reason, whatever the number of runs
    assert len(clauses) == 5, skipped
    assert "external, integrity, oracle on 7 run(s): not run (not among --checks)" in clauses
    assert any(c.startswith("judge on 7 run(s): no judge model named") for c in clauses)
    notebooks = next(c for c in clauses if c.startswith("plagiarism"))
    assert notebooks == (
        "plagiarism on 7 run(s) (ID: aerial-cactus-identification, jigsaw-toxic-comment-classification-challenge, "
        "leaf-classification and 4 more): no public notebooks of ID found: run `podium kernels download -c ID` or "
        "pass --kernels DIR"
    )


def test_dolos_that_cannot_run_is_a_harness_error_not_a_verdict(
    tmp_path: Path, data_dir: Path, kernels: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.audit import plagiarism

    monkeypatch.setattr(plagiarism, "_dolos_state", lambda install: (False, "node is not on PATH"))
    run = make_run(tmp_path, data_dir, 0, submission="id,x\n", code={"s.py": FAIR_CODE})
    audit = audit_run(run, ["plagiarism"], {"kernels": str(kernels), "plagiarism_engine": "dolos"})
    assert audit.result("plagiarism") is None and "plagiarism" in audit.incomplete
    assert audit.harness_errors == {"plagiarism": "Dolos was asked for but cannot run: node is not on PATH"}


def test_the_report_states_the_network_once_whichever_node_observed_it() -> None:
    from podium.report.audited import audit_section

    def row(node: str) -> dict[str, Any]:
        statement = f"network: loopback only (docker, observed at start by node {node}: the record was made by the node: interfaces lo); sockets none"  # fmt: skip
        return {"competition_id": CID, "competition_version": 1, "audit": "incomplete", "integrity": [statement],
                "integrity_verdict": "clean", "gold_medal": False, "silver_medal": False, "bronze_medal": False}  # fmt: skip

    block = audit_section({"a": [row("gpu-1"), row("gpu-2")]})["a"]
    network = [line for line in block["integrity"]["statement"] if line.startswith("loopback")]
    assert network == [
        "loopback only (docker, observed at start by a node: the record was made by the node: interfaces lo): 2 of 2 runs"
    ]

"""The plagiarism check: a renamed copy of a public notebook is flagged with its fragments, clean code is not,
and Dolos's similarities through podium equal dolos-lib's own on the same files.

The Dolos tests need Node and the pinned dolos-lib (``python -m podium.audit.dolos`` installs it, about
nine minutes on 2 cores); without them they are skipped, and under PODIUM_REQUIRE_DOLOS=1 (CI, which
installs it in the background and writes ``building``/``ready``/``failed`` to PODIUM_DOLOS_STATUS) they
fail instead. They run last (conftest).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("jupytext")

from podium.audit import audit_run, dolos, winnowing
from podium.audit.plagiarism import THRESHOLD, similarities
from podium.data.kernels import import_kernels, kernel_refs, notebook_to_python
from test_audit_framework import make_run

FIXTURES = Path(__file__).parent / "fixtures" / "kernels"
NOTEBOOK = FIXTURES / "spaceship-titanic" / "fixture__spaceship-cabin-boosting.ipynb"
RENAMES = {"frame": "df", "add_features": "build", "train_features": "X_train", "test_features": "X_test",
           "model": "clf", "oof": "valid_pred", "SPEND": "COSTS", "COLUMNS": "FEATURES", "fold": "k"}  # fmt: skip
CLEAN = """import pandas as pd
from sklearn.linear_model import LogisticRegression


def load(path):
    table = pd.read_csv(path)
    table["Age"] = table["Age"].fillna(30)
    return table


train, test = load("/home/data/train.csv"), load("/home/data/test.csv")
numeric = ["Age", "RoomService", "Spa"]
learner = LogisticRegression(max_iter=1000).fit(train[numeric].fillna(0), train["Transported"])
guess = learner.predict(test[numeric].fillna(0))
pd.DataFrame({"PassengerId": test["PassengerId"], "Transported": guess}).to_csv("/home/submission/submission.csv")
"""


def renamed_copy() -> str:
    """The fixture notebook's code with every name of its own changed, as an agent hiding a copy would."""
    text = notebook_to_python(NOTEBOOK.read_text())
    for old, new in RENAMES.items():
        text = re.sub(rf"\b{old}\b", new, text)
    return text


@pytest.fixture
def kernels_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "kernels" / "spaceship-titanic"
    folder.mkdir(parents=True)
    shutil.copy(NOTEBOOK, folder)
    (folder / "other__unrelated.py").write_text("import os\n\nfor name in sorted(os.listdir('.')):\n    print(name)\n")
    return folder.parent


def _audit(tmp_path: Path, code: str, kernels: Path, engine: str, seed: int = 0) -> dict:
    run = make_run(tmp_path / "runs", seed=seed)
    (run / "code" / "solution.py").write_text(code)
    options = {"kernels": str(kernels), "plagiarism_engine": engine}
    return audit_run(run, ["plagiarism"], options).to_json()


# --- podium's own winnowing (always available) ---------------------------------------------------


def test_winnowing_ignores_names_and_comments() -> None:
    original = notebook_to_python(NOTEBOOK.read_text())
    same = winnowing.compare(winnowing.fingerprint(original), winnowing.fingerprint(renamed_copy()))
    assert same.similarity == 1.0 and same.fragments
    other = winnowing.compare(winnowing.fingerprint(original), winnowing.fingerprint(CLEAN))
    assert other.similarity < 0.3
    assert winnowing.fingerprint("x = (").hashes == ()  # too short and broken: nothing, no error


def test_a_renamed_copy_is_flagged_and_clean_code_is_not(tmp_path: Path, kernels_dir: Path) -> None:
    copied = _audit(tmp_path, renamed_copy(), kernels_dir, "winnowing")
    assert copied["verdict"] == "flagged"
    (flag,) = copied["flags"]
    assert "fixture__spaceship-cabin-boosting.ipynb" in flag["reason"] and "100%" in flag["reason"]
    assert flag["evidence"] and all(e["file"] == "code/solution.py" and e["line"] >= 1 for e in flag["evidence"])
    result = copied["results"][0]
    assert result["inputs"]["engine"].startswith("winnowing") and float(result["inputs"]["max_similarity"]) > THRESHOLD

    clean = _audit(tmp_path, CLEAN, kernels_dir, "winnowing", seed=1)
    assert clean["results"][0]["verdict"] == "clean" and clean["flags"] == []  # the run: incomplete (judge...)


def test_downloaded_kernels_are_found_under_their_reference(tmp_path: Path) -> None:
    ref = kernel_refs("spaceship-titanic")[0]
    source = tmp_path / "downloaded"
    source.mkdir()
    shutil.copy(NOTEBOOK, source / f"{ref.partition('/')[2]}.ipynb")
    import_kernels(["spaceship-titanic"], tmp_path / "data", source)
    run = make_run(tmp_path / "runs")
    (run / "code" / "solution.py").write_text(renamed_copy())
    audit = audit_run(run, ["plagiarism"], {"data_dir": str(tmp_path / "data"), "plagiarism_engine": "winnowing"})
    assert audit.verdict == "flagged" and ref in audit.flags[0].reason


def test_no_kernels_is_a_skip_with_the_fix(tmp_path: Path) -> None:
    run = make_run(tmp_path / "runs")
    audit = audit_run(run, ["plagiarism"], {"data_dir": str(tmp_path / "empty")})
    assert "podium kernels download -c spaceship-titanic" in audit.skipped["plagiarism"]


# --- Dolos ---------------------------------------------------------------------------------------

REQUIRE = os.environ.get("PODIUM_REQUIRE_DOLOS") == "1"
WAIT_S = float(os.environ.get("PODIUM_DOLOS_WAIT_S", "1800"))


@pytest.fixture(scope="module")
def dolos_ready() -> Path:
    """The installed Dolos (waiting while CI's background install says ``building``), else skip or fail."""
    status = os.environ.get("PODIUM_DOLOS_STATUS")
    deadline = time.monotonic() + WAIT_S
    while status and Path(status).is_file() and Path(status).read_text().strip() == "building":
        if time.monotonic() > deadline:
            break
        time.sleep(5)
    ok, detail = dolos.dolos_available(install=False)
    if not ok:
        if REQUIRE:
            pytest.fail(f"PODIUM_REQUIRE_DOLOS=1 but Dolos cannot run: {detail}")
        pytest.skip(f"Dolos cannot run ({detail}): python -m podium.audit.dolos installs it")
    return dolos.dolos_home()


def _direct_dolos(home: Path, left: Path, right: Path) -> float:
    """dolos-lib called directly in Node, as its documentation shows, on two files."""
    script = (
        'import { Dolos } from "@dodona/dolos-lib";'
        f"const report = await new Dolos().analyzePaths({json.dumps([str(left), str(right)])});"
        "const pairs = report.allPairs();"
        "console.log(JSON.stringify(pairs.length ? pairs[0].similarity : 0));"
    )
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, "--input-type=module", "-e", script], cwd=home, capture_output=True, text=True, check=True
    )
    return float(json.loads(done.stdout))


@pytest.mark.dolos
def test_dolos_flags_the_renamed_copy_with_fragments(dolos_ready: Path, tmp_path: Path, kernels_dir: Path) -> None:
    copied = _audit(tmp_path, renamed_copy(), kernels_dir, "dolos")
    assert copied["verdict"] == "flagged"
    result = copied["results"][0]
    assert result["inputs"]["engine"].startswith(f"dolos-lib {dolos.DOLOS_VERSION}")
    (flag,) = copied["flags"]
    assert flag["evidence"] and flag["evidence"][0]["file"] == "code/solution.py"
    assert re.match(
        r"lines \d+-\d+ ~ fixture__spaceship-cabin-boosting\.ipynb lines \d+-\d+", flag["evidence"][0]["fragment"]
    )
    assert _audit(tmp_path, CLEAN, kernels_dir, "dolos", seed=1)["results"][0]["verdict"] == "clean"


@pytest.mark.dolos
def test_dolos_similarities_equal_dolos_own(dolos_ready: Path, tmp_path: Path) -> None:
    kernel = notebook_to_python(NOTEBOOK.read_text())
    half = "\n".join(renamed_copy().splitlines()[: len(kernel.splitlines()) // 2]) + "\n"
    agent = {"copy.py": renamed_copy(), "half.py": half, "clean.py": CLEAN}
    ours = {s.agent_file: s.similarity for s in similarities(agent, {"kernel": kernel}, "dolos")}
    (tmp_path / "kernel.py").write_text(kernel)
    for name, text in agent.items():
        (tmp_path / name).write_text(text)
        assert ours[name] == _direct_dolos(dolos_ready, tmp_path / name, tmp_path / "kernel.py"), name
    assert ours["copy.py"] > THRESHOLD > ours["clean.py"] and 0 < ours["half.py"] < 1


@pytest.mark.dolos
def test_cli_reads_kernels_from_a_folder(
    dolos_ready: Path, tmp_path: Path, kernels_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium.cli import main

    run = make_run(tmp_path / "runs")
    (run / "code" / "solution.py").write_text(renamed_copy())
    assert main(["audit", str(run), "--checks", "plagiarism", "--kernels", str(kernels_dir), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["verdict"] == "flagged" and row["flags"][0]["check"] == "plagiarism"


def test_the_best_node_kept_among_the_logs_is_compared(tmp_path: Path, kernels_dir: Path) -> None:
    run = make_run(tmp_path / "runs")
    (run / "logs" / "nodes").mkdir()
    (run / "logs" / "nodes" / "7.py").write_text(renamed_copy())
    node = {"code_file": "/home/logs/nodes/7.py", "metric": 0.8, "valid": True, "lower_is_better": False}
    (run / "logs" / "journal.jsonl").write_text(json.dumps(node) + "\n")
    audit = audit_run(run, ["plagiarism"], {"kernels": str(kernels_dir), "plagiarism_engine": "winnowing"})
    assert audit.verdict == "flagged" and audit.flags[0].evidence[0].file == "logs/nodes/7.py"

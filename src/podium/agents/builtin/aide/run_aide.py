"""AIDE (``aideml`` from PyPI, unpatched) in podium's sandbox, with MLE-bench's settings by default.

What this wrapper adds around ``aide``, and why:

- the sample submission is placed at once, so the run never ends without a valid file;
- AIDE gets MLE-bench's settings (500 steps, 9 h per step, always debug, debug depth 20) and the
  run's time limit less a margin, after which it is stopped;
- ``generate_report=False``: AIDE's final report would call a default model outside the run's model;
- model names starting with ``gpt-`` or ``o<digit>-`` make AIDE 0.2.2 call api.openai.com directly
  (Responses API, ignoring the base URL), so the model must be an alias (``models: {alias: name}``
  in agent.yaml's ``llm:``), which the proxy maps to the provider's name; such a name is refused here;
- AIDE runs through ``launch_aide.py``: a review whose tool call is not JSON is asked for once more,
  then counts as a buggy node, instead of ending the search and leaving AIDE hung until the time is
  up (``AIDE_TOLERATE_BAD_REVIEWS=0``: AIDE's own behaviour); whatever ends AIDE, it exits;
- AIDE leaves in ``working/submission.csv`` the output of its last script, not of its best node,
  so at the end the best node's code (by AIDE's own metric, from ``journal.json``) runs once more,
  within the time left, and its submission is validated and placed; if that fails, the last
  script's submission is kept when it is valid.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.append(os.environ.get("PODIUM_HOME", "/home"))
from podium_submission import Submission

HOME = Path(os.environ.get("PODIUM_HOME", "/home"))
DATA, CODE, LOGS = HOME / "data", HOME / "code", HOME / "logs"
_OPENAI_NAMES = re.compile(r"^(gpt-|o\d)")


def _say(message: str) -> None:
    print(f"[aide wrapper] {message}", flush=True)


def _task() -> Path:
    """AIDE's task file: podium's instructions, then the competition's description."""
    parts = [(HOME / name).read_text(encoding="utf-8") for name in ("instructions.md",) if (HOME / name).is_file()]
    description = DATA / "description.md"
    if description.is_file():
        parts.append("COMPETITION INSTRUCTIONS\n------\n\n" + description.read_text(encoding="utf-8"))
    path = CODE / "aide_task.md"
    path.write_text("\n\n".join(parts), encoding="utf-8")
    return path


def _run(command: list[str], cwd: Path, seconds: float) -> int | None:
    """Run ``command`` in its own session, killed with everything it started after ``seconds``."""
    child = subprocess.Popen(command, cwd=cwd, start_new_session=True)
    try:
        return child.wait(timeout=max(1.0, seconds))
    except subprocess.TimeoutExpired:
        return None
    finally:  # what it left running (AIDE's interpreter) goes with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _best_node(log_root: Path) -> dict | None:
    """AIDE's best working node (not buggy, with a metric), from the newest journal.json."""
    journals = sorted(log_root.glob("*/journal.json"), key=lambda p: p.stat().st_mtime)
    if not journals:
        return None
    nodes = json.loads(journals[-1].read_text(encoding="utf-8")).get("nodes", [])
    good = [n for n in nodes if not n.get("is_buggy") and (n.get("metric") or {}).get("value") is not None]
    if not good:
        return None
    maximize = bool(good[0]["metric"].get("maximize"))
    return max(good, key=lambda n: n["metric"]["value"] if maximize else -n["metric"]["value"])


def main() -> int:
    started = time.monotonic()
    limit = float(os.environ.get("TIME_LIMIT_SECS") or 3600)
    submission = Submission(HOME / "submission" / "submission.csv", LOGS / "snapshots", started)
    submission.start_with_sample(DATA)
    models = [m for m in os.environ.get("PODIUM_LLM_MODELS", "").split(",") if m]
    code_model = os.environ.get("AIDE_CODE_MODEL") or (models[0] if models else "")
    feedback_model = os.environ.get("AIDE_FEEDBACK_MODEL") or code_model
    for name in (code_model, feedback_model):
        if not name or _OPENAI_NAMES.match(name):
            _say(
                f"model {name!r}: AIDE sends names like gpt-* and o1-* straight to api.openai.com; give the agent "
                "an alias in agent.yaml (llm: models: {aide-code: gpt-4o-2024-08-06}) or --model with an alias"
            )
            return 2
    rerun_reserve = min(1800.0, max(60.0, 0.1 * limit))
    log_root, workspace_root = LOGS / "aide", CODE / "aide"
    settings = {
        "data_dir": str(DATA),
        "desc_file": str(_task()),
        "exp_name": "exp",
        "log_dir": str(log_root),
        "workspace_dir": str(workspace_root),
        "copy_data": "False",
        "generate_report": "False",
        "agent.code.model": code_model,
        "agent.feedback.model": feedback_model,
        "agent.steps": os.environ.get("STEP_LIMIT", "500"),
        "agent.search.max_debug_depth": os.environ.get("AIDE_MAX_DEBUG_DEPTH", "20"),
        "agent.search.debug_prob": os.environ.get("AIDE_DEBUG_PROB", "1"),
        "exec.timeout": str(int(min(32400.0, max(60.0, limit - rerun_reserve)))),
    }
    launcher = [sys.executable, str(Path(__file__).with_name("launch_aide.py"))]
    budget = limit - rerun_reserve - (time.monotonic() - started)
    _say(f"running AIDE for at most {budget:.0f} s with {code_model} (feedback {feedback_model})")
    code = _run([*launcher, *(f"{k}={v}" for k, v in settings.items())], CODE, budget)
    _say(
        "AIDE finished" if code == 0 else f"AIDE ended ({'stopped at its time' if code is None else f'status {code}'})"
    )
    best = _best_node(log_root)
    workspaces = sorted(workspace_root.glob("*/working"), key=lambda p: p.stat().st_mtime)
    if best is not None and workspaces:
        working = workspaces[-1]
        script = working.parent / "podium_best_rerun.py"
        script.write_text(best["code"], encoding="utf-8")
        if (working / "submission.csv").is_file():  # the last script's, kept aside as the fallback
            os.replace(working / "submission.csv", working / "submission.last.csv")
        left = limit - (time.monotonic() - started) - 15
        _say(f"running AIDE's best node again (metric {best['metric']['value']}) to write its submission")
        _run([sys.executable, str(script)], working.parent, left)
        produced = working / "submission.csv"
        if produced.is_file() and submission.validate(produced)[0]:
            submission.place(produced, "aide-best", best["metric"]["value"])
            _say("the best node's submission is in place")
            return 0
    last = sorted(workspace_root.glob("*/working/submission.last.csv"), key=lambda p: p.stat().st_mtime)
    last = last or sorted(workspace_root.glob("*/working/submission.csv"), key=lambda p: p.stat().st_mtime)
    if last and submission.validate(last[-1])[0]:
        submission.place(last[-1], "aide-last")
        _say("kept the submission of AIDE's last script")
    return 0


if __name__ == "__main__":
    sys.exit(main())

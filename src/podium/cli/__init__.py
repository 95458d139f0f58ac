"""The ``podium`` command line.

    podium list [--split NAME] [--json] [--ended-after DATE]
    podium show ID[@VERSION] [--json]
    podium grade-sample SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium validate SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium grade --submission RUNS.jsonl --output-dir DIR [--data-dir DIR]
    podium prepare -c ID | --split NAME | --all | --list FILE | --ended-after DATE [--data-dir DIR] [--from PATH] ...
    podium verify [-c ID | --split NAME] [--data-dir DIR]
    podium check ID[@VERSION] [--from RAW] [--data-dir DIR] [--skip-run] [--json]
    podium kernels download -c ID | --split NAME [--from PATH] [--data-dir DIR] [--force]
    podium run [--agent NAME|PATH] [--competitions ID,... | --split NAME] [--seeds N] [--time-limit 24h]
               [--run-group NAME] [--redo failed|all] [--ended-after DATE] ...
    podium example [--split NAME] [--output-dir DIR]
    podium report PATH... [--split NAME] [--ended-after DATE] [--pad-missing] [--seeds N] [--format text|md|json] ...
    podium audit PATH... [--checks LIST] [--format text|json] [--output FILE] [--data-dir DIR] [--agent-dir DIR]
    podium serve [--runs-dir DIR] [--host 127.0.0.1] [--port 8000] [--token [T]]
    podium export mlebench GROUP... --out DIR [--experiment-id ID] [--pad-missing] [--split NAME]...
    podium bundle create GROUP... -o FILE.tar.gz [--data-dir DIR] [--max-file-size SIZE] [--agent-dir DIR]
    podium bundle verify FILE [--data-dir DIR] [--max-size SIZE] [--work-dir DIR]
    podium --version

Heavy modules are imported inside each command, so ``grade-sample`` loads only what its
competition's metric needs.

Exit status: 0 done; 1 done, but the outcome is a failure (an invalid submission, no run of a batch
made a submission, a run could not run, a verify mismatch, a failed prepare); 2 a usage error or
anything podium refuses with a message (``podium: error: ...``, one line with the fix); 70 a bug
in podium (its traceback, and a line saying so); 130 interrupted (Ctrl-C); 141 the reader of the
output went away (``podium list | head``).
"""

from __future__ import annotations

from podium.cli.entry import main

__all__ = ["main"]

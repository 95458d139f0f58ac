"""Grading and validating an agent's submission in a child process, with bounded memory and time.

Whatever an agent writes, checking it must neither take the harness's memory nor hang it, so
``podium run`` grades with :func:`grade_isolated` and the validation endpoint checks with
:func:`validate_isolated`: the submission is opened here (safely, see
:mod:`podium.grading.files`), and its descriptor is handed to a fresh ``python -m
podium.grading.isolated`` whose data segment is capped (``RLIMIT_DATA``, with ``RLIMIT_AS`` as a
backstop) and which is killed after a wall-clock limit. The child reads and checks the file
exactly as :func:`podium.grading.grader.grade` and :func:`podium.grading.validator.validate` do, in-process.

What comes back:

- a grading report or a validation result, as computed in-process;
- a submission that needs more memory than the cap (an allocation fails: ``MemoryError``, or a
  native library aborts saying so), or more time than the limit, is an invalid submission whose
  error says which cap it hit;
- a harness error in the child (broken answers, data not found) is raised here as the same
  class; any other exception in the child, or its death by a signal, is raised as a
  :class:`HarnessError` (a podium bug is never the agent's invalid submission).

The defaults: ``PODIUM_GRADING_MEMORY`` (e.g. ``8G``), else half the machine's memory between 2
and 16 GiB; one hour for grading, ten minutes for validation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium import errors
from podium.competition import Competition
from podium.errors import HarnessError, InvalidSubmissionError
from podium.grading.files import NoSubmissionError, SubmissionFile, open_submission
from podium.grading.grader import answers_path, submission_size_cap, unscored_report
from podium.grading.holdout import HoldoutScore
from podium.paths import default_data_dir
from podium.records import GradeReport, ValidationResult
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "GRADING_TIMEOUT_S",
    "VALIDATION_TIMEOUT_S",
    "Limits",
    "default_memory_bytes",
    "grade_isolated",
    "score_holdout_isolated",
    "validate_isolated",
]

GRADING_TIMEOUT_S = 3600.0
VALIDATION_TIMEOUT_S = 600.0
_RESULT_LIMIT = 4 << 20  # bytes of the child's answer read back (a report is a few KB)
_STDERR_TAIL = 4000
#: What native libraries print when an allocation fails and they abort (C++ runtime, OpenBLAS).
_OUT_OF_MEMORY = (
    "std::bad_alloc",
    "memory allocation still failed",
    "cannot allocate memory",  # strerror(ENOMEM); glibc's "... for thread-local data: ABORT"
    "failed to launch worker thread",
)


def _out_of_memory(text: str) -> bool:
    lowered = text.lower()
    return any(sign.lower() in lowered for sign in _OUT_OF_MEMORY)


def default_memory_bytes() -> int:
    """``PODIUM_GRADING_MEMORY`` (``8G``, ``512M`` or bytes), else half the memory, in [2, 16] GiB."""
    if text := os.environ.get("PODIUM_GRADING_MEMORY"):
        from podium.units import parse_size

        size = parse_size(text)
        assert size is not None
        return size
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = 8 << 30
    return int(min(16 << 30, max(2 << 30, physical // 2)))


@dataclass(frozen=True)
class Limits:
    """What checking one submission may take: data-segment bytes and wall-clock seconds."""

    memory_bytes: int
    timeout_s: float

    @classmethod
    def default(cls, timeout_s: float) -> Limits:
        return cls(default_memory_bytes(), timeout_s)


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _over(limits: Limits, outcome: dict[str, Any], what: str) -> str:
    if outcome["kind"] == "memory":
        return (
            f"{what} this submission needed more than {_gib(limits.memory_bytes)} of memory, the cap on "
            "checking one submission; it is treated as invalid. Fix: write only the rows and columns of "
            "the sample submission, with cells of ordinary length"
        )
    return (
        f"{what} this submission took longer than {limits.timeout_s:g} s, the limit on checking one "
        "submission; it is treated as invalid. Fix: write only the rows and columns of the sample "
        "submission, with cells of ordinary length"
    )


def grade_isolated(
    competition: Competition,
    folder: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None = None,
    *,
    name: str = "submission.csv",
    limits: Limits | None = None,
) -> GradeReport:
    """Grade ``folder/name`` (a regular file inside the run's submission folder, reached through
    no symbolic link, under the size cap) in a child process with bounded memory and time."""
    data = Path(data_dir) if data_dir else default_data_dir()
    answers_path(competition, data)  # unprepared data is a harness error, whatever the agent wrote
    limits = limits or Limits.default(GRADING_TIMEOUT_S)
    try:
        file = open_submission(folder, name, max_bytes=submission_size_cap(competition, data))
    except InvalidSubmissionError as exc:
        exists = not isinstance(exc, NoSubmissionError)
        return unscored_report(competition, Path(folder) / name, exists=exists, error=str(exc))
    with file:
        job = {"task": "grade", "competition": competition.ref, "data_dir": os.fsdecode(data)}
        outcome = _run(job, file, limits)
    if outcome["kind"] in ("memory", "timeout"):
        return unscored_report(competition, file.path, exists=True, error=_over(limits, outcome, "grading"))
    return GradeReport(**outcome["report"])


def validate_isolated(
    competition: Competition,
    file: SubmissionFile,
    sample_submission: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
) -> ValidationResult:
    """:func:`podium.grading.validator.validate_file` on an opened submission, in a child process with
    bounded memory and time (what the validation endpoint runs on each body)."""
    limits = limits or Limits.default(VALIDATION_TIMEOUT_S)
    job = {"task": "validate", "competition": competition.ref, "sample": os.fsdecode(sample_submission)}
    outcome = _run(job, file, limits)
    if outcome["kind"] in ("memory", "timeout"):
        return ValidationResult(False, _over(limits, outcome, "checking"))
    return ValidationResult(**outcome["result"])


def score_holdout_isolated(
    competition: Competition, predictions: SubmissionFile, labels: SubmissionFile, *, limits: Limits | None = None
) -> HoldoutScore:
    """:func:`podium.grading.holdout.score_holdout` on two opened files, in a child process with bounded memory
    and time (what the validation endpoint's hold-out scorer runs)."""
    limits = limits or Limits.default(VALIDATION_TIMEOUT_S)
    job = {"task": "holdout", "competition": competition.ref, "labels": [labels.fd, labels.path, labels.size]}
    outcome = _run(job, predictions, limits, extra_fds=(labels.fd,))
    if outcome["kind"] in ("memory", "timeout"):
        error = _over(limits, outcome, "scoring")
        return HoldoutScore(False, None, error, competition.metric.name, competition.higher_is_better)
    return HoldoutScore(**outcome["result"])


def _run(job: dict[str, Any], file: SubmissionFile, limits: Limits, extra_fds: tuple[int, ...] = ()) -> dict[str, Any]:
    """Run one job in a child; returns its outcome, or raises HarnessError."""
    job = {**job, "fd": file.fd, "path": file.path, "size": file.size, "memory_bytes": limits.memory_bytes}
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the child imports this podium (src/podium/grading/isolated.py)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # its per-thread buffers would count against the cap
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "podium.grading.isolated"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            pass_fds=(file.fd, *extra_fds),
            env=env,
        )
        try:
            child.communicate(json.dumps(job).encode(), timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            return {"kind": "timeout"}
        finally:
            if child.poll() is None:  # timed out, or this thread was interrupted
                child.kill()
                child.wait()
        out.seek(0)
        answer = out.read(_RESULT_LIMIT)
        err.seek(0, os.SEEK_END)
        err.seek(max(0, err.tell() - _STDERR_TAIL))
        stderr = err.read().decode("utf-8", "replace").strip()
    try:
        outcome: dict[str, Any] = loads(answer, max_bytes=_RESULT_LIMIT, what="the child's answer")
    except UntrustedJSONError:  # also one nested too deep, which json.loads raises as a RecursionError
        if _out_of_memory(stderr):
            return {"kind": "memory"}  # native code that aborts when an allocation fails under the cap
        how = f"was killed by signal {-child.returncode}" if child.returncode < 0 else f"exited {child.returncode}"
        raise HarnessError(f"checking the submission in a child process failed: it {how}; stderr: {stderr}") from None
    if outcome["kind"] == "harness":
        cls = getattr(errors, outcome["type"], HarnessError)
        raise (cls if isinstance(cls, type) and issubclass(cls, errors.PodiumError) else HarnessError)(
            outcome["message"]
        )
    if outcome["kind"] == "bug":
        error = HarnessError(
            f"checking the submission failed with {outcome['type']}: {outcome['message']} (a podium bug, not the "
            "submission's fault)"
        )
        error.child_traceback = outcome["traceback"]  # type: ignore[attr-defined]
        raise error
    return outcome


# -- the child ----------------------------------------------------------------------------------


def _limit_memory(memory_bytes: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_DATA, (memory_bytes, memory_bytes))
    backstop = memory_bytes + (8 << 30)  # kernels before 4.7 count only brk in RLIMIT_DATA
    resource.setrlimit(resource.RLIMIT_AS, (backstop, backstop))


def _warm_up() -> None:
    """Start Arrow's thread pools before the cap: a thread whose stack cannot be mapped later makes
    Arrow wait for ever instead of failing (found by the exhaustion test), so all of them exist
    before any memory runs short."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with tempfile.NamedTemporaryFile(suffix=".csv") as warm:
        warm.write(b"a,b\n" + b"1,x\n" * 20_000)
        warm.flush()
        for _ in range(2):  # the CPU pool parses blocks, the IO pool reads ahead from the file
            stream = pa.OSFile(warm.name).get_stream(0, os.path.getsize(warm.name))
            pacsv.read_csv(stream, read_options=pacsv.ReadOptions(block_size=1024))


def _work(job: dict[str, Any]) -> dict[str, Any]:
    from podium import registry

    competition = registry.get(job["competition"])
    file = SubmissionFile(job["fd"], job["path"], job["size"])
    if job["task"] == "grade":
        from podium.grading.grader import grade_file

        return {"kind": "report", "report": grade_file(competition, file, Path(job["data_dir"])).to_dict()}
    if job["task"] == "holdout":
        from podium.grading.holdout import score_holdout

        labels = SubmissionFile(*job["labels"])
        return {"kind": "result", "result": score_holdout(competition, file, labels).to_dict()}
    from podium.grading.validator import validate_file

    return {"kind": "result", "result": validate_file(competition, file, job["sample"]).to_dict()}


def _child() -> None:
    job = json.loads(sys.stdin.buffer.read())
    _warm_up()
    _limit_memory(int(job["memory_bytes"]))
    result = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the answer
    try:
        outcome = _work(job)
    except MemoryError:  # numpy's and Arrow's allocation failures included
        outcome = {"kind": "memory"}
    except Exception as exc:
        import pyarrow as pa

        if isinstance(exc, pa.ArrowCapacityError) or _out_of_memory(str(exc)):
            outcome = {"kind": "memory"}  # beyond Arrow's 2 GiB offsets, or a thread or buffer the cap refused
        elif isinstance(exc, errors.PodiumError) and not isinstance(exc, InvalidSubmissionError):
            outcome = {"kind": "harness", "type": type(exc).__name__, "message": str(exc)}
        else:
            outcome = {
                "kind": "bug",
                "type": type(exc).__name__,
                "message": errors.shorten(str(exc), 2000),
                "traceback": "".join(traceback.format_exception(exc))[-_STDERR_TAIL:],
            }
    result.write(json.dumps(outcome))
    result.flush()


if __name__ == "__main__":
    _child()

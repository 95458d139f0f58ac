"""The in-sandbox validation endpoint: an HTTP server on a Unix socket, one per run.

The agent checks the format of a submission without learning anything about the answers::

    with ValidationServer(competition, sample_submission, run_dir / "validate.sock", run_dir / "validation.jsonl"):
        ...  # mount the socket into the sandbox as /home/validate.sock and run the agent

``POST /validate`` takes the submission CSV as the body and answers
``{"valid": bool, "error": str | None, "warnings": [...]}``: the same check grading applies
(:func:`podium.grading.validator.validate`, with the ids of the sample submission), never a score. The
server is given the sample submission only; it does not know where the answers are.

Other answers: ``GET /health`` -> 200 with the body cap (``max_body_bytes``); a call sooner than
``min_interval_s`` after the previous one (or while one is running) -> 429 with ``retry_after_s``;
a body over ``max_body_bytes`` -> 413; a missing or malformed ``Content-Length`` -> 411/400; an
exception inside validation -> 500, reported as a harness error and never as an invalid
submission. Every ``/validate`` call is appended to ``log_path`` as one JSON line (see
:attr:`ValidationServer.calls`), with its body's digest and row sketch under ``body``
(:mod:`podium.services.digest`; the audit reads them): a call refused by the rate limit too,
whose body is read (a few at a time) for its digest before the 429, so probes fired in a burst
are as visible as probes spaced out.

The body is bounded like a submission: at most the size cap grading applies
(:func:`podium.grading.files.size_cap` of the sample submission, unless ``max_body_bytes`` says
otherwise), streamed into a private folder under ``body_dir`` (the run's own folder: by default
the folder of ``log_path``, never the harness's ``/tmp``), and checked in a child process with
bounded memory and time (:func:`podium.grading.isolated.validate_isolated`), as grading checks it.

``POST /score-holdout`` (offered when the server is given ``holdout_log``) is the hold-out scorer: the
body is the agent's predictions followed by its labels (``X-Predictions-Bytes`` says where the labels
begin), each bounded like a submission, and the answer is the score podium's grader gives those
predictions against those labels (:mod:`podium.grading.holdout`), or why there is none. It has a slot and a
rate limit of its own, as ``/validate`` has (a call answered while another runs is refused 429), so
scoring never delays a validation; each call is one line of
``holdout_log``, apart from the validation log (the audit's integrity statement counts them apart),
with both files' digests.

The agent's side is ``sandbox_files/validate_submission.py`` (and its ``.sh`` wrapper) and
``sandbox_files/score_holdout.py``, found with :func:`podium.services.sandbox_file`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from podium.competition import Competition
from podium.errors import InvalidSubmissionError
from podium.grading.files import SubmissionFile, size_cap
from podium.grading.isolated import Limits, score_holdout_isolated, validate_isolated
from podium.services._http import UnixService
from podium.services._validation_request import (
    _FORM_OVERHEAD,
    _Call,
    _copy_body,
    _copy_part,
    _file_name,
    _form_file,
    _Handler,
    _is_form,
)
from podium.services.digest import body_digest

__all__ = ["NAME_HEADER", "PREDICTIONS_HEADER", "ValidationServer"]

#: Header by which the client passes the submission's file name, so the ``.csv`` rule still applies.
NAME_HEADER = "X-Submission-Name"
#: Header by which the hold-out scorer's client says how many bytes of the body are the predictions.
PREDICTIONS_HEADER = "X-Predictions-Bytes"


class ValidationServer(UnixService):
    """Serve format validation for one competition on a Unix socket, in a background thread."""

    handler = _Handler
    thread_name = "podium-validation"

    def __init__(
        self,
        competition: Competition,
        sample_submission: Path,
        socket_path: Path,
        log_path: Path,
        *,
        min_interval_s: float = 1.0,
        max_body_bytes: int | None = None,
        body_dir: Path | None = None,
        limits: Limits | None = None,
        holdout_log: Path | None = None,
    ) -> None:
        super().__init__(socket_path, error_log=Path(log_path).with_name("service_errors.log"))
        self.holdout_log = Path(holdout_log) if holdout_log is not None else None
        self.competition = competition
        self.sample_submission = Path(sample_submission)
        self.log_path = Path(log_path)
        self.min_interval_s = float(min_interval_s)
        if max_body_bytes is None:  # what grading accepts: the cap depends on the sample submission
            max_body_bytes = size_cap(self.sample_submission.stat().st_size)
        self.max_body_bytes = int(max_body_bytes)
        self.body_dir = Path(body_dir) if body_dir is not None else self.log_path.parent
        self.limits = limits
        self._tmp: Path | None = None
        self._lock = threading.Lock()  # guards _busy and _last_end (by endpoint: validation, the hold-out scorer)
        self._log_lock = threading.Lock()
        self._busy: set[str] = set()
        self._last_end: dict[str, float] = {}
        self._digests = 0  # bodies digested so far (guarded by _lock)
        self._refused_bodies = threading.BoundedSemaphore(_REFUSED_AT_ONCE)

    def _open(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.touch()
        if self.holdout_log is not None:
            self.holdout_log.touch()
        self.body_dir.mkdir(parents=True, exist_ok=True)
        self._tmp = Path(tempfile.mkdtemp(prefix=".validation-", dir=self.body_dir))  # mode 0700

    def _close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- the log --------------------------------------------------------------------------------

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every ``/validate`` call so far, oldest first, as logged (for the run record)."""
        if not self.log_path.exists():
            return []
        with self._log_lock:
            lines = self.log_path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def _log(self, record: dict[str, Any], path: Path | None = None) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._log_lock, (path or self.log_path).open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()

    @property
    def holdout_calls(self) -> list[dict[str, Any]]:
        """Every ``/score-holdout`` call so far, oldest first, as logged."""
        if self.holdout_log is None or not self.holdout_log.exists():
            return []
        with self._log_lock:
            lines = self.holdout_log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    # -- one call -------------------------------------------------------------------------------

    def _acquire(self, endpoint: str = "validate") -> tuple[float, str] | None:
        """Take the validation slot; else return (seconds to wait before retrying, why)."""
        now = time.monotonic()
        with self._lock:
            if endpoint in self._busy:
                return max(self.min_interval_s, 1.0), "another validation is still running"
            last = self._last_end.get(endpoint)
            if last is not None and now - last < self.min_interval_s:
                what = "validation" if endpoint == "validate" else "the hold-out scorer"
                why = f"{what} may be called at most once every {self.min_interval_s:g} s"
                return self.min_interval_s - (now - last), why
            self._busy.add(endpoint)
            return None

    def _release(self, endpoint: str = "validate") -> None:
        with self._lock:
            self._busy.discard(endpoint)
            self._last_end[endpoint] = time.monotonic()

    def _handle_validate(self, handler: _Handler) -> None:
        """One ``/validate`` call: the body is the CSV (podium's clients), or a multipart form whose
        ``file`` field is the CSV (MLE-bench's ``validate_submission.sh``: ``curl -F file=@...``)."""
        call = _Call(handler, self._log)
        length_header = handler.headers.get("Content-Length")
        try:
            length = int(length_header) if length_header is not None else None
        except ValueError:
            length = -1
        if length is not None:
            call.record["body_bytes"] = length

        refused = self._acquire()
        try:
            if length is None:
                call.finish(411, {"error": "send the submission as the request body, with a Content-Length header"})
            elif length < 0:
                call.finish(400, {"error": f"bad Content-Length header {length_header!r}"})
            elif length > self.max_body_bytes + (_FORM_OVERHEAD if _is_form(handler) else 0):
                message = (
                    f"the submission is {length} bytes; the validation server accepts at most {self.max_body_bytes} "
                    "bytes, and grading refuses a larger submission file too"
                )
                call.finish(413, {"error": message})
            elif refused is not None:
                with self._refused_bodies:  # the body is read for its digest only: a few at a time on disk
                    self._receive(call, length, refused)
            else:
                self._receive(call, length, None)
        finally:
            if refused is None:
                self._release()

    def _receive(self, call: _Call, length: int, refused: tuple[float, str] | None) -> None:
        """Read the body into a private file and log its digest; then answer 429 (``refused``: (seconds to wait,
        why)) or validate it. A refused body is read too, so a burst of calls is logged as fully as one call."""
        assert self._tmp is not None, "the server is not running"
        handler = call.handler
        name = _file_name(handler.headers.get(NAME_HEADER))
        path = Path(tempfile.mkdtemp(dir=self._tmp)) / name  # private: mode 0700
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            received = _copy_body(handler, fd, length)
            if received < length:
                call.finish(400, {"error": f"the body ended after {received} of {length} bytes"})
                return
            form = _is_form(handler)
            if form:
                part = _form_file(fd, received, handler.headers.get("Content-Type", ""))
                if part is None:
                    call.finish(400, {"error": "the form has no 'file' field; send it as curl -F file=@submission.csv"})
                    return
                os.close(fd)
                fd, name, received = _copy_part(path, part)
            self._digest(call, fd, received)
            if refused is not None:
                wait = round(max(refused[0], 0.0), 3)
                message = f"rate limited: {refused[1]}; retry in {wait:g} s"
                headers = {"Retry-After": str(int(wait) + 1)}
                call.finish(429, {"error": message, "retry_after_s": wait}, "rate-limited", headers=headers)
                return
            self._validate(call, fd, name, received, form)
        finally:
            os.close(fd)
            shutil.rmtree(path.parent, ignore_errors=True)

    def _digest(self, call: _Call, fd: int, size: int) -> None:
        """Log the body's digest (SHA-256 and rows, what the audit compares calls by): every call's, with a row
        sketch for the first :data:`_MAX_DIGESTS` (each adds about 600 bytes to the log line)."""
        digest = body_digest(fd, size)
        with self._lock:
            self._digests += 1
            sketched = self._digests <= _MAX_DIGESTS
        if not sketched:
            del digest["row_sketch"]
        call.record["body"] = digest

    def _validate(self, call: _Call, fd: int, name: str, size: int, form: bool) -> None:
        try:
            # the agent's name for its file (so messages and the .csv rule match grading's), never
            # the server's own path; read through this descriptor only
            result = validate_isolated(
                self.competition, SubmissionFile(fd, name, size), self.sample_submission, limits=self.limits
            )
        except InvalidSubmissionError as exc:  # validate() returns these; kept as a safety net
            call.finish(200, {"valid": False, "error": str(exc), "warnings": []}, "invalid")
        except Exception as exc:  # a podium bug or broken prepared data: never the agent's fault
            message = (
                "harness error: the validation server failed while checking the submission. "
                "This is a bug in podium, not a problem with your submission; do not change the "
                f"submission because of it ({type(exc).__name__}: {exc})"
            )
            trace = "".join(traceback.format_exception(exc)) + getattr(exc, "child_traceback", "")
            call.finish(500, {"error": message}, traceback=trace.strip())
        else:
            payload: dict[str, Any] = {"valid": result.valid, "error": result.error, "warnings": list(result.warnings)}
            if form:  # what MLE-bench's agents read: one sentence in "result"
                payload["result"] = "Submission is valid." if result.valid else f"Submission is invalid: {result.error}"
            call.finish(200, payload, "valid" if result.valid else "invalid")

    # -- the hold-out scorer --------------------------------------------------------------------

    def _handle_holdout(self, handler: _Handler) -> None:
        """One ``/score-holdout`` call: predictions then labels in one body, split at ``X-Predictions-Bytes``."""
        assert self.holdout_log is not None and self._tmp is not None
        call = _Call(handler, lambda record: self._log(record, self.holdout_log))
        try:
            length = int(handler.headers.get("Content-Length", ""))
            first = int(handler.headers.get(PREDICTIONS_HEADER, ""))
        except ValueError:
            call.finish(400, {"error": f"send both files as the body, with Content-Length and {PREDICTIONS_HEADER}"})
            return
        call.record["body_bytes"] = length
        if not 0 <= first <= length or first > self.max_body_bytes or length - first > self.max_body_bytes:
            message = (f"each file may have at most {self.max_body_bytes} bytes (predictions: {first}, labels: "
                       f"{length - first}), as a submission")  # fmt: skip
            call.finish(413 if first >= 0 and length >= first else 400, {"error": message})
            return
        refused = self._acquire("score-holdout")
        if refused is not None:
            wait = round(max(refused[0], 0.0), 3)
            message = f"rate limited: {refused[1]}; retry in {wait:g} s"
            call.finish(429, {"error": message, "retry_after_s": wait}, "rate-limited",
                        headers={"Retry-After": str(int(wait) + 1)})  # fmt: skip
            return  # the body is left unread: the connection closes
        folder = Path(tempfile.mkdtemp(dir=self._tmp))  # private: mode 0700
        files: list[SubmissionFile] = []
        try:
            for part, size in (("predictions", first), ("labels", length - first)):
                name = _file_name(handler.headers.get(f"X-{part.capitalize()}-Name"))
                flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                files.append(SubmissionFile(os.open(folder / f"{part}-{name}", flags, 0o600), name, size))
                if _copy_body(handler, files[-1].fd, size) < size:
                    call.finish(400, {"error": f"the body ended inside the {part}"})
                    return
                call.record[part] = body_digest(files[-1].fd, size)
            self._score(call, files[0], files[1])
        finally:
            for file in files:
                file.close()
            shutil.rmtree(folder, ignore_errors=True)
            self._release("score-holdout")

    def _score(self, call: _Call, predictions: SubmissionFile, labels: SubmissionFile) -> None:
        try:
            result = score_holdout_isolated(self.competition, predictions, labels, limits=self.limits)
        except Exception as exc:  # a podium bug: never the agent's fault
            message = (f"harness error: the hold-out scorer failed ({type(exc).__name__}: {exc}). This is a bug in "
                       "podium, not a problem with your files")  # fmt: skip
            call.finish(500, {"error": message}, traceback="".join(traceback.format_exception(exc)).strip())
            return
        payload = result.to_dict()
        call.record["score"] = result.score
        call.finish(200, payload, "scored" if result.score is not None else "not-scored")


#: The most calls of one run whose body's row sketch is logged (each line grows by about 600 bytes).
_MAX_DIGESTS = 5000
#: The most refused bodies read at once (each up to the size cap, in the run's folder) for their digest.
_REFUSED_AT_ONCE = 2

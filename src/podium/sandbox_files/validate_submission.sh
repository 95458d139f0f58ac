#!/bin/sh
# Check a submission's format with podium's validation server (no score is given).
# Usage: validate_submission.sh [PATH]   (default: /home/submission/submission.csv)
# Exit status: 0 valid, 1 invalid, 2 the check could not be made.
# Uses python3 when the sandbox has one; otherwise curl (agent images without Python).
if command -v python3 >/dev/null 2>&1; then
  exec python3 "$(dirname "$0")/validate_submission.py" "$@"
fi
SUBMISSION="${1:-/home/submission/submission.csv}"
SOCKET="${PODIUM_VALIDATION_SOCKET:-/home/validate.sock}"
if [ -L "$SUBMISSION" ]; then
  echo "Submission is invalid: $SUBMISSION is a symbolic link; only a regular file is graded and links are never followed. Fix: write the submission as a regular CSV file"
  exit 1
fi
if [ ! -f "$SUBMISSION" ]; then
  echo "Submission is invalid: no submission file at $SUBMISSION"
  exit 1
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "Could not check the submission: this sandbox has neither python3 nor curl to reach $SOCKET." >&2
  exit 2
fi
NAME=$(printf '%s' "$(basename "$SUBMISSION")" | tr -c '[:alnum:]._-' '_')
REPLY=$(curl -sS --max-time 900 --unix-socket "$SOCKET" -H "Content-Type: text/csv" \
  -H "X-Submission-Name: $NAME" \
  --data-binary "@$SUBMISSION" -w '\n%{http_code}' http://localhost/validate) || {
  echo "Could not check the submission: the validation server at $SOCKET is unreachable."
  exit 2
}
STATUS=$(printf '%s\n' "$REPLY" | tail -n 1)
BODY=$(printf '%s\n' "$REPLY" | sed '$d')
case "$STATUS:$BODY" in
  200:*'"valid": true'*) echo "Submission is valid (a format check only; it is graded after the run): $BODY"; exit 0 ;;
  200:*'"valid": false'*) echo "Submission is invalid: $BODY"; exit 1 ;;
  *) echo "Not checked (HTTP $STATUS): $BODY"; exit 2 ;;
esac

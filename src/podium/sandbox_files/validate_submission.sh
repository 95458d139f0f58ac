#!/bin/sh
# Check a submission's format with podium's validation server (no score is given).
# Usage: validate_submission.sh [PATH]   (default: /home/submission/submission.csv)
# Exit status: 0 valid, 1 invalid, 2 the check could not be made.
exec python3 "$(dirname "$0")/validate_submission.py" "$@"

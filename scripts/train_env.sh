#!/usr/bin/env bash
# Build the training stack into a virtual environment of its own: TRL, Hugging Face datasets and Prime
# Intellect's verifiers, with PyTorch's CPU build, for the tests that hand podium's trajectories and episodes
# to them (tests/test_gym_training_stack.py and tests/test_gym_verifiers.py).
#
#   scripts/train_env.sh [VENV]        default VENV: ~/.cache/podium/train-env
#
# It is kept apart from podium's own packages because verifiers pins the OpenAI SDK below 3, where podium's
# tests drive the proxy with the SDK's current release. The venv sees the system's packages
# (--system-site-packages: podium itself, gymnasium, pandas), its own pins first. The last line of
# VENV/.podium-status says how the build ended: "building", "ready" or "failed"; CI starts this script in the
# background and the tests that need it, which run last, wait for that line. A venv already built with the same
# pins (VENV/.podium-pins) is kept as it is.
set -euo pipefail
VENV="${1:-${PODIUM_TRAIN_VENV:-$HOME/.cache/podium/train-env}}"
PYTHON="${PYTHON:-python3}"
# Pinned: the versions the tests were written against. torch 2.13.0 is the CPU build (no CUDA download).
PINS=("torch==2.13.0" "trl==1.16.0" "datasets==5.2.0" "verifiers==0.4.0")
mkdir -p "$VENV"
status() { printf '%s\n' "$1" >>"$VENV/.podium-status"; }
trap 'status failed' ERR
trap 'status failed; exit 130' INT TERM
if [[ -x "$VENV/bin/python" && "$(cat "$VENV/.podium-pins" 2>/dev/null)" == "${PINS[*]}" ]] \
  && [[ "$(tail -n 1 "$VENV/.podium-status" 2>/dev/null)" == ready ]]; then
  echo "the training stack in $VENV is built with ${PINS[*]}"
  exit 0
fi
: >"$VENV/.podium-status"
status building
start=$(date +%s)
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv --system-site-packages "$VENV"
# torch first and alone: with it in place, trl's own requirement on torch installs nothing more.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[0]}"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}"
"$VENV/bin/python" -c "import trl.data_utils, datasets, verifiers.v1, torch"
printf '%s' "${PINS[*]}" >"$VENV/.podium-pins"
echo "built the training stack in $VENV in $(($(date +%s) - start)) s"
status ready

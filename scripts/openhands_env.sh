#!/usr/bin/env bash
# Build the openhands environment (a Debian 13 root filesystem with Python 3.13 and OpenHands' packages;
# podium/environments/rootfs.py) into an environment folder of its own:
#
#   scripts/openhands_env.sh [DIR]        default DIR: $PODIUM_ENV_DIR or ~/.cache/podium/envs
#
# It is `podium env build --profile openhands`, content-addressed: a folder named by the profile's digest,
# so a second build of the same profile finds it and returns at once. The last line of DIR/.openhands-status
# says how the build ended: "building", "ready" or "failed" (the log is what this script printed). CI starts
# this script in the background; tests/test_openhands_agent.py runs last and waits for that line.
set -euo pipefail
DIR="${1:-${PODIUM_ENV_DIR:-$HOME/.cache/podium/envs}}"
mkdir -p "$DIR"
STATUS="$DIR/.openhands-status"
echo building >>"$STATUS"
started=$(date +%s)
if PODIUM_ENV_DIR="$DIR" python3 -m podium env build --profile openhands; then
  echo "openhands environment ready in $(($(date +%s) - started)) s"
  echo ready >>"$STATUS"
else
  echo failed >>"$STATUS"
  exit 1
fi

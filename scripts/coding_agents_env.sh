#!/usr/bin/env bash
# Build the coding-agents environment (a Debian 13 root filesystem with Node, Claude Code and Codex CLI from
# npm, and Python 3.13 with the minimal profile's pins; podium/environments/profiles/coding-agents.yaml) into
# an environment folder of its own:
#
#   scripts/coding_agents_env.sh [DIR]        default DIR: $PODIUM_ENV_DIR or ~/.cache/podium/envs
#
# It is `podium env build --profile coding-agents`, content-addressed: a folder named by the profile's digest,
# so a second build of the same profile finds it and returns at once. The last line of
# DIR/.coding-agents-status says how the build ended: "building", "ready" or "failed" (the log is what this
# script printed). CI starts this script in the background; tests/test_coding_agents.py runs last and waits
# for that line.
set -euo pipefail
DIR="${1:-${PODIUM_ENV_DIR:-$HOME/.cache/podium/envs}}"
mkdir -p "$DIR"
STATUS="$DIR/.coding-agents-status"
echo building >>"$STATUS"
started=$(date +%s)
if PODIUM_ENV_DIR="$DIR" python3 -m podium env build --profile coding-agents; then
  echo "coding-agents environment ready in $(($(date +%s) - started)) s"
  echo ready >>"$STATUS"
else
  echo failed >>"$STATUS"
  exit 1
fi

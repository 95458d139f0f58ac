#!/usr/bin/env bash
# Make sure a Docker engine answers for podium's docker sandbox; start a private one if none does.
#
#   scripts/dockerd.sh          start (if needed) and wait until the engine answers
#   scripts/dockerd.sh stop     stop the engine this script started
#
# The engine listens where DOCKER_HOST points (default unix:///var/run/docker.sock), keeps its
# images and containers in its own data root ($PODIUM_DOCKER_DATA_ROOT, default
# /var/lib/podium-docker), and runs without a bridge network or iptables rules: podium's
# containers have no network at all, and images are built locally, never pulled.
# Needs root and Debian's docker.io (apt-get install -y docker.io).
set -euo pipefail
HOST="${DOCKER_HOST:-unix:///var/run/docker.sock}"
SOCKET="${HOST#unix://}"
DATA_ROOT="${PODIUM_DOCKER_DATA_ROOT:-/var/lib/podium-docker}"
STATE="${PODIUM_DOCKER_STATE:-/run/podium-docker}"

answers() { DOCKER_HOST="$HOST" docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

case "${1:-start}" in
  start)
    if answers; then
      echo "docker engine answers at $HOST"
      exit 0
    fi
    if [[ "$HOST" != unix://* ]]; then
      echo "no docker engine answers at $HOST, and this script starts engines on Unix sockets only" >&2
      exit 1
    fi
    command -v dockerd >/dev/null || { echo "dockerd not found: apt-get install -y docker.io" >&2; exit 1; }
    mkdir -p "$DATA_ROOT" "$STATE" "$(dirname "$SOCKET")"
    nohup dockerd --data-root "$DATA_ROOT" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
      --bridge=none --iptables=false -H "$HOST" >"$STATE/dockerd.log" 2>&1 &
    for _ in $(seq 1 120); do
      if answers; then
        echo "docker engine started at $HOST (data root $DATA_ROOT, log $STATE/dockerd.log)"
        exit 0
      fi
      sleep 0.5
    done
    echo "dockerd did not answer within 60 s; its log ($STATE/dockerd.log) ends with:" >&2
    tail -n 20 "$STATE/dockerd.log" >&2 || true
    exit 1
    ;;
  stop)
    if [[ -f "$STATE/dockerd.pid" ]]; then
      kill "$(cat "$STATE/dockerd.pid")" && echo "stopped dockerd $(cat "$STATE/dockerd.pid")"
    else
      echo "no dockerd started by this script is running"
    fi
    ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac

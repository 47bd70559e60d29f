#!/usr/bin/env bash
# Schemathesis against the server's own description: `st run --checks all` on a fresh
# `serve --seed demo` (free loopback port, admin token, no rate limit), with the settings and
# hooks of tests/schemathesis/ (each narrow case said why there). Any failure fails the run.
#
# Usage: tests/schemathesis/run.sh [BINARY]   (default target/release/chronoscope, built when
#        missing). Env: SCHEMATHESIS_MAX_TIME (seconds of generation, default 150),
#        SCHEMATHESIS_VENV (default target/schemathesis-venv), SCHEMATHESIS_KEEP=1 keeps the
#        temp dir (server log), extra arguments for `st run` in SCHEMATHESIS_ARGS (e.g.
#        "--seed 123" to replay a run).
# Needs: python3 with venv (the pinned schemathesis comes from PyPI), curl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
pin="4.32.5"
max_time="${SCHEMATHESIS_MAX_TIME:-150}"

bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/release/chronoscope}"
if [ ! -x "$bin" ] && [ -z "${1:-}" ]; then
  cargo build --release --locked
fi
[ -x "$bin" ] || { echo "schemathesis: no binary at $bin" >&2; exit 1; }

venv="${SCHEMATHESIS_VENV:-${CARGO_TARGET_DIR:-$repo/target}/schemathesis-venv}"
if [ "$("$venv/bin/st" --version 2>/dev/null || true)" != "st, version $pin" ]; then
  echo "--> installing schemathesis==$pin into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$pin"
fi

# shellcheck source=../../scripts/lib/demo-server.sh
. "$repo/scripts/lib/demo-server.sh"
echo "--> chronoscope serve --seed demo"
start_demo_server schemathesis "$bin" "${SCHEMATHESIS_KEEP:-0}"

CHRONOSCOPE_TOKEN="$("$bin" --data-dir "$data" token --subject schemathesis --scope admin --ttl 2h)"
export CHRONOSCOPE_TOKEN

echo "--> st run --checks all --max-time $max_time -w 1"
# GET /v1/monitor-timeline/stream is included: its description gives each event's shape (event
# name, id, JSON data of a named component), which schemathesis checks event by event. A stream
# of a real timeline lasts as long as the client reads it, and schemathesis reads a body to its
# end: generated timeline ids name no timeline (a documented 400 before any stream), and
# tests/http_stream.rs reads real streams against the same description.
# One worker: with two, Hypothesis's shared caches raced once in generation (a KeyError in
# its lambda-source cache, reported as a FlakyFailure "Runtime Error" on POST /v1/create-timeline;
# the same seed passed when run again): a failure of the tool, not of the server, that would
# turn CI red at random.
# shellcheck disable=SC2086 # SCHEMATHESIS_ARGS is a list of words
"$venv/bin/st" --no-color --config-file "$here/schemathesis.toml" run "$base/v1/openapi.json" \
  --checks all --max-time "$max_time" -w 1 \
  ${SCHEMATHESIS_ARGS:-}

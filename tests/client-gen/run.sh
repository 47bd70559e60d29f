#!/usr/bin/env bash
# Typed clients generated from the server's own description, as a team integrating the service
# would make them, on a fresh `serve --seed demo` (free loopback port, admin token, no rate limit):
#   1. openapi-python-client (pinned, in a venv) generates a Python client from
#      /v1/openapi.json; any warning fails the run;
#   2. smoke.py drives every operation through that client alone, in its default and full
#      views, and checks each answer parsed whole into the typed model the description names;
#   3. openapi-typescript (pinned in package-lock.json) generates TypeScript types from the same
#      description, and tsc type-checks them with check.ts, which uses them.
# Any failure fails the run.
#
# Usage: tests/client-gen/run.sh [BINARY]   (default target/release/chronoscope, built when
#        missing). Env: CLIENT_GEN_VENV (default target/client-gen-venv), CLIENT_GEN_KEEP=1 keeps
#        the temp dir (server log, description, generated clients).
# Needs: python3 with venv, node + npm (PyPI and npm registry traffic only), curl.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
generator="openapi-python-client==0.29.1"
# The generated client's one dependency the generator does not bring.
runtime="python-dateutil==2.9.0.post0"

bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/release/chronoscope}"
if [ ! -x "$bin" ] && [ -z "${1:-}" ]; then
  cargo build --release --locked
fi
[ -x "$bin" ] || { echo "client-gen: no binary at $bin" >&2; exit 1; }

venv="${CLIENT_GEN_VENV:-${CARGO_TARGET_DIR:-$repo/target}/client-gen-venv}"
stamp="$venv/.installed"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$generator $runtime" ]; then
  echo "--> installing $generator $runtime into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$generator" "$runtime"
  echo "$generator $runtime" >"$stamp"
fi

echo "--> npm ci (openapi-typescript and typescript, pinned in package-lock.json)"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)

# shellcheck source=../../scripts/lib/demo-server.sh
. "$repo/scripts/lib/demo-server.sh"
echo "--> chronoscope serve --seed demo"
start_demo_server client-gen "$bin" "${CLIENT_GEN_KEEP:-0}"
subject="client-gen"
token="$("$bin" --data-dir "$data" token --subject "$subject" --scope admin --ttl 1h)"
curl -fsS "$base/v1/openapi.json" -o "$work/openapi.json"

echo "--> openapi-python-client generate (no warning allowed)"
# The generator formats its output with the ruff it installs in the venv.
if ! PATH="$venv/bin:$PATH" "$venv/bin/openapi-python-client" generate \
    --path "$work/openapi.json" --output-path "$work/python/chronoscope_client" --meta none \
    >"$work/generate.log" 2>&1; then
  cat "$work/generate.log"
  echo "client-gen: openapi-python-client failed" >&2
  exit 1
fi
# Anything but the line naming the output is a warning (its path is left out of the search).
if grep -v '^Generating ' "$work/generate.log" | grep -qiE 'warning|error|skipping|not generated|cannot'; then
  cat "$work/generate.log"
  echo "client-gen: openapi-python-client warned about the description" >&2
  exit 1
fi

echo "--> smoke.py: every operation, default and full views, through the generated client"
PYTHONPATH="$work/python" "$venv/bin/python" "$here/smoke.py" --base "$base" --token "$token" \
  --subject "$subject" --spec "$work/openapi.json" --package chronoscope_client

echo "--> openapi-typescript, then tsc --strict"
mkdir -p "$work/ts"
if ! "$here/node_modules/.bin/openapi-typescript" "$work/openapi.json" -o "$work/ts/chronoscope.d.ts" \
    >"$work/ts.log" 2>&1 || grep -v "$work" "$work/ts.log" | grep -qiE 'warn|error'; then
  cat "$work/ts.log"
  echo "client-gen: openapi-typescript did not accept the description" >&2
  exit 1
fi
cp "$here/check.ts" "$work/ts/check.ts"
"$here/node_modules/.bin/tsc" --noEmit --strict --target es2022 --module es2022 \
  --moduleResolution bundler "$work/ts/check.ts"

echo "--> client-gen: the Python client worked whole and the TypeScript types check"

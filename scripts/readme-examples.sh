#!/usr/bin/env bash
# Runs the README's guide-operation examples exactly as written against a fresh
# `chronoscope serve --seed demo` on 127.0.0.1:8080; any non-2xx answer fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet
bin_dir="$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)"
export PATH="$bin_dir:$PATH"
export CHRONOSCOPE_DATA_DIR="$(mktemp -d)"
export REDOCLY_TELEMETRY=off

chronoscope --seed demo serve --listen 127.0.0.1:8080 2>"$CHRONOSCOPE_DATA_DIR/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$CHRONOSCOPE_DATA_DIR"' EXIT
for _ in $(seq 1 100); do
  command curl -sf http://127.0.0.1:8080/healthz >/dev/null && break
  sleep 0.1
done

# The README's curl lines, run as written; --fail-with-body turns an error status into a failure.
curl() { command curl --fail-with-body --show-error "$@"; }
examples=$(sed -n '/<!-- guide-examples:start -->/,/<!-- guide-examples:end -->/p' README.md | sed '/^```/d;/^<!--/d')
[ -n "$examples" ] || { echo "no guide examples found in README.md" >&2; exit 1; }
count=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  echo "\$ $line"
  eval "$line"
  echo
  count=$((count + 1))
done <<<"$examples"
echo "README examples: $count passed, 0 failed"

#!/usr/bin/env bash
# Third-party conformance of the HTTP service: Redocly CLI `respect` walks the Arazzo workflows
# of warp.arazzo.yaml against a live release server, three times:
#   1. with the published Warp description (shared/reference/warp.openapi.yaml) as the source,
#   2. with a strict copy of it (additionalProperties: false everywhere, as strict clients read it),
#   3. with the server's own generated description (/v1/openapi.json),
# then the workflows of served.arazzo.yaml (guide operations, extensions, shared errors) against
# that generated description, and `redocly lint` checks it. Any failure fails the run.
#
# Needs: node + npm (registry traffic only, for `npm ci`), cargo, curl.
# Env: CHRONOSCOPE_SHARED_DIR (default: shared/ beside the repository when it is there, else the
#      copy of warp.openapi.yaml kept in tests/conformance/reference/),
#      CONFORMANCE_KEEP=1 keeps the temp dir (server log, respect JSON reports) for a post-mortem.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${CHRONOSCOPE_SHARED_DIR:-$repo/../shared}"
warp="$shared/reference/warp.openapi.yaml"
if [ ! -f "$warp" ]; then
  if [ -n "${CHRONOSCOPE_SHARED_DIR:-}" ]; then
    echo "conformance: $warp not found (CHRONOSCOPE_SHARED_DIR names the shared/ directory)" >&2
    exit 1
  fi
  # A clone on its own: use the copy kept in the repository.
  warp="$here/reference/warp.openapi.yaml"
  echo "conformance: no shared/ beside the repository; using $warp"
elif ! cmp -s "$warp" "$here/reference/warp.openapi.yaml"; then
  echo "conformance: note: $warp differs from the copy in tests/conformance/reference/; using $warp"
fi
warp="$(cd "$(dirname "$warp")" && pwd)/$(basename "$warp")"

# Redocly must never phone home nor nag: CI has no network but the registries.
export REDOCLY_TELEMETRY=off
export REDOCLY_SUPPRESS_UPDATE_NOTICE=true
export NO_UPDATE_NOTIFIER=1
export NO_COLOR=1

step() { printf '\n--> %s\n' "$*"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/chronoscope-conformance.XXXXXX")"
server_pid=""
cleanup() {
  local rc=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ] && [ -f "$work/server.log" ]; then
    echo "conformance: failed (exit $rc); last lines of the server log:" >&2
    tail -n 40 "$work/server.log" >&2 || true
  fi
  if [ "${CONFORMANCE_KEEP:-0}" = 1 ]; then
    echo "conformance: kept $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "npm ci (Redocly CLI, pinned in package-lock.json)"
(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
redocly="$here/node_modules/.bin/redocly"

step "cargo build --release"
(cd "$repo" && cargo build --release --locked)
bin="${CARGO_TARGET_DIR:-$repo/target}/release/chronoscope"
[ -x "$bin" ] || { echo "conformance: no binary at $bin" >&2; exit 1; }

# A free loopback port: bind port 0, read it back, release it.
port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"
data="$work/data"
mkdir -p "$data"

step "start chronoscope serve on $base (fresh data dir, no rate limit)"
"$bin" --data-dir "$data" serve --listen "127.0.0.1:$port" --rate-limit 0 --address-rate-limit 0 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 150); do
  if curl -fsS -o /dev/null "$base/healthz" 2>/dev/null; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "conformance: the server exited before answering /healthz" >&2
    exit 1
  fi
  sleep 0.2
done
curl -fsS -o /dev/null "$base/healthz"

token="$("$bin" --data-dir "$data" token --subject conformance --scope read,write --ttl 1h)"

# Adds an event to the primary timeline through the extension endpoint (not in Warp's
# description) and prints its id. $1: fixed point or not.
add_event() {
  local body
  body="$(FIXED="$1" node -e 'console.log(JSON.stringify({
    description: process.env.FIXED === "true" ? "Tesla demonstrates alternating current" : "The blueprint lies in the safe",
    time: "1889-03-10T23:50:00Z",
    location: "New York",
    fixed_point: process.env.FIXED === "true"}))')"
  curl -fsS -X POST "$base/v1/timeline/primary/events" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data "$body" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const e=JSON.parse(s);if(!e.event_id){process.exit(1)}console.log(e.event_id)})'
}

fixed_event="$(add_event true)"

# Respect's closing counts (it pads them with no-break spaces).
summary() { grep -aE '(Workflows|Steps|Checks): [0-9]' "$1" | sed -E 's/^[^A-Z]*/    /'; }

# Runs respect once. $1: label, $2: source description file, $3: server URL for it.
# Each run manipulates its own fresh event (a manipulated event stays superseded).
respect_run() {
  local label="$1" source="$2" server="$3" arazzo="$work/$1.arazzo.yaml" event inputs
  step "respect ($label): source $source, server $server"
  # The workflow file names the copy kept beside it; point this copy at the file for this run.
  sed "s#url: reference/warp.openapi.yaml#url: $source#" \
    "$here/warp.arazzo.yaml" >"$arazzo"
  grep -q "url: $source" "$arazzo"
  event="$(add_event false)"
  inputs="$(TOKEN="$token" EVENT="$event" FIXED="$fixed_event" node -e 'console.log(JSON.stringify({
    token: process.env.TOKEN, event_id: process.env.EVENT, fixed_event_id: process.env.FIXED}))')"
  if "$redocly" respect "$arazzo" --server "warp=$server" --input "$inputs" \
      --execution-timeout 300000 --json-output "$work/$label.respect.json" >"$work/$label.log" 2>&1; then
    summary "$work/$label.log"
  else
    cat "$work/$label.log"
    echo "conformance: respect ($label) failed" >&2
    return 1
  fi
}

respect_run published "$warp" "$base/v1"

if ! "$redocly" bundle "$warp" --ext json -o "$work/warp.json" >"$work/bundle.log" 2>&1; then
  cat "$work/bundle.log"; exit 1
fi
node "$here/strict-description.js" "$work/warp.json" "$work/warp.strict.json"
respect_run strict "$work/warp.strict.json" "$base/v1"

step "fetch the server's own description"
curl -fsS "$base/v1/openapi.json" -o "$work/served.openapi.json"
# Its paths are relative to its first server URL (absolute or not): keep that URL's path, on our origin.
served_server="$(BASE="$base" node -e '
  const d = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const u = new URL((d.servers && d.servers[0] && d.servers[0].url) || "/", process.env.BASE + "/");
  console.log(process.env.BASE + u.pathname.replace(/\/+$/, ""));' "$work/served.openapi.json")"
respect_run served "$work/served.openapi.json" "$served_server"

# The guide operations, the extensions and the shared errors, which only the served description lists.
step "respect (served-only operations): source $work/served.openapi.json, server $served_server"
cp "$here/served.arazzo.yaml" "$work/served.arazzo.yaml"
served_inputs="$(TOKEN="$token" node -e 'console.log(JSON.stringify({token: process.env.TOKEN, traveller: "conformance"}))')"
if "$redocly" respect "$work/served.arazzo.yaml" --server "served=$served_server" --input "$served_inputs" \
    --execution-timeout 300000 --json-output "$work/served-only.respect.json" >"$work/served-only.log" 2>&1; then
  summary "$work/served-only.log"
else
  cat "$work/served-only.log"
  echo "conformance: respect (served-only operations) failed" >&2
  exit 1
fi

step "redocly lint of the served description"
"$redocly" lint "$work/served.openapi.json" --config "$here/redocly.yaml" --format stylish

step "conformance: all respect runs and the lint passed"

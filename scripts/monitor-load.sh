#!/usr/bin/env bash
# Does a monitor scan of a huge timeline stall other requests? On loopback, with SQLite:
#   1. writes a log whose `primary` timeline holds --events events (examples/big_log.rs);
#   2. starts `chronoscope serve` on it and measures GET /v1/timelines with wrk, once alone and
#      once while --monitors clients call GET /v1/monitor-timeline?timeline_id=primary back to
#      back (each call scans every event);
#   3. prints requests/s, p50, p99 and max latency of both, and how many scans ran.
# A server that scans on its async workers holds every request queued behind a worker for a
# whole scan, so the p99 with scans beside it jumps to the scan's length; one that scans on the
# blocking pool keeps it near the quiet figure (the scans still take CPU).
#
# usage: scripts/monitor-load.sh [--events N] [--duration SECS] [--connections N]
#                                [--monitors N] [--compare BIN] [--heavy] [--streams N]
#                                [--event-streams N]
#   --compare BIN   also measure another build of chronoscope (e.g. an older release binary) on
#                   the same log, after this one, and print both.
#   --heavy         each of the --monitors loops cycles through four heavy reads instead of the
#                   monitor alone: a monitor scan of a time range (never kept: scans every call),
#                   a page of past versions (events?versions=all), validate-integrity (the whole
#                   log checked and folded) and a monitor-events page (issue 38's p99 figure).
#   --streams N     instead: open N monitor streams of primary (examples/monitor_streams.rs) and
#                   print, per phase (idle; 3 item registrations; 3 events added to another
#                   timeline; 3 to primary), the server's CPU seconds, the scans /metrics counted
#                   and the stream events delivered.
#   --event-streams N  instead: an event added to primary every 2 s for 25 s, alone and then with
#                   N unfiltered `monitor-events` streams of primary open (examples/event_streams.rs);
#                   prints the server's CPU seconds and peak memory of both and exits 1 when the
#                   streams add more than issue 38's budget (200 MiB, 10 CPU-s) or miss a write.
# Env: LOAD_EVENTS (1000000), LOAD_DURATION (10), LOAD_CONNECTIONS (8), LOAD_MONITORS (2),
# CHRONOSCOPE_BIN (default: this tree's release build). wrk is installed from Debian's packages
# when missing. Every process this script starts is stopped when it ends, however it ends.
set -euo pipefail

events="${LOAD_EVENTS:-1000000}"
duration="${LOAD_DURATION:-10}"
connections="${LOAD_CONNECTIONS:-8}"
monitors="${LOAD_MONITORS:-2}"
compare=""
streams=""
event_streams=""
heavy=""
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --monitors) monitors="$2"; shift 2 ;;
    --compare) compare="$2"; shift 2 ;;
    --streams) streams="$2"; shift 2 ;;
    --event-streams) event_streams="$2"; shift 2 ;;
    --heavy) heavy=1; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "monitor-load.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$events" "$duration" "$connections" "$monitors" ${streams:+"$streams"} ${event_streams:+"$event_streams"}; do
  case "$n" in ''|*[!0-9]*|0) echo "monitor-load.sh: counts and durations are positive integers" >&2; exit 2 ;; esac
done
if [ -n "$compare" ] && [ ! -x "$compare" ]; then
  echo "monitor-load.sh: --compare $compare is not an executable" >&2; exit 2
fi

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
. "$repo/scripts/lib/load-common.sh"
ensure_wrk

echo "==> cargo build --release (chronoscope, examples/big_log, monitor_streams, event_streams)"
cargo build --release --locked --bin chronoscope --example big_log --example monitor_streams \
  --example event_streams
target="${CARGO_TARGET_DIR:-$repo/target}/release"
bin="${CHRONOSCOPE_BIN:-$target/chronoscope}"

start_work_dir

echo "==> writing $events events to the primary timeline"
# The records are chained with this key; every server below checks them with it.
"$target/examples/big_log" --database "sqlite://$work/big.db" --data-dir "$work/keys" \
  --events "$events"
export CHRONOSCOPE_LOG_KEY_FILE="$work/keys/log-key"

# Runs wrk on GET /v1/timelines ($1 label, $2 port, $3 token); prints "req/s p50 p99 max".
measure_get() {
  local label="$1" port="$2" token="$3" out="$work/$1.wrk"
  printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$token" >"$work/get.lua"
  wrk -t 1 -c "$connections" -d "${duration}s" --latency -s "$work/get.lua" \
    "http://127.0.0.1:$port/v1/timelines" >"$out"
  sed 's/^/    /' "$out" >&2
  if grep -qE 'Non-2xx|Socket errors' "$out"; then
    echo "monitor-load.sh: $label: some requests failed (see above)" >&2
    return 1
  fi
  awk '/^Requests\/sec:/ { rps = $2 }
       $1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 }
       $1 == "Latency" && NF >= 4 && $2 ~ /[0-9]/ { max = $4 }
       END { printf "%s %s %s %s", rps, p50, p99, max }' "$out"
}

# Measures one build ($1 label, $2 binary); appends its lines to $work/summary.
run_build() {
  local label="$1" exe="$2" port data log extra=() started ready token quiet busy scans one i
  port="$(free_port)"
  data="$work/data-$label"
  log="$work/serve-$label.log"
  mkdir -p "$data"
  # Builds from before per-address limits have no --address-rate-limit.
  if "$exe" serve --help 2>/dev/null | grep -q -- '--address-rate-limit'; then
    extra=(--address-rate-limit 0)
  fi
  # The heavy loops scan the log back to back as one traveller: no cooldown between scans.
  if "$exe" serve --help 2>/dev/null | grep -q -- '--scan-cooldown'; then
    extra+=(--scan-cooldown 0)
  fi
  echo "==> $label: serve ($exe)"
  started="$(date +%s.%N)"
  "$exe" --data-dir "$data" --database "sqlite://$work/big.db" serve \
    --listen "127.0.0.1:$port" --rate-limit 0 "${extra[@]}" >"$log" 2>&1 &
  pids+=($!)
  wait_ready "http://127.0.0.1:$port/readyz" "${pids[-1]}" "$log" 300
  ready="$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')"
  token="$("$exe" --data-dir "$data" --database "sqlite://$work/big.db" token \
    --subject load --scope read,write --ttl 1h)"
  local monitor_url="http://127.0.0.1:$port/v1/monitor-timeline?timeline_id=primary"
  one="$(curl -fsS -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $token" "$monitor_url")"

  echo "==> $label: GET /v1/timelines alone"
  quiet="$(measure_get "$label-quiet" "$port" "$token")"

  echo "==> $label: GET /v1/timelines beside $monitors back-to-back monitor scans"
  local loops=()
  local base="http://127.0.0.1:$port" auth=(-H "Authorization: Bearer $token")
  local range="time_range=1900-01-01T00:00:00Z/2100-01-01T00:00:00Z"
  for i in $(seq 1 "$monitors"); do
    : >"$work/scans-$label-$i"
    if [ -n "$heavy" ]; then
      ( while :; do
          curl -fsS -o /dev/null --max-time 60 "${auth[@]}" \
            "$base/v1/monitor-timeline?timeline_id=primary&$range" \
            && curl -fsS -o /dev/null --max-time 60 "${auth[@]}" \
              "$base/v1/timeline/primary/events?versions=all&limit=100" \
            && curl -fsS -o /dev/null --max-time 60 "${auth[@]}" -H 'Content-Type: application/json' \
              -d '{"timeline_id":"primary"}' "$base/v1/validate-integrity" \
            && curl -fsS -o /dev/null --max-time 60 "${auth[@]}" \
              "$base/v1/monitor-events?timeline_id=primary&limit=100" \
            && echo . >>"$work/scans-$label-$i"
        done ) &
    else
      ( while :; do
          curl -fsS -o /dev/null --max-time 60 "${auth[@]}" "$monitor_url" \
            && echo . >>"$work/scans-$label-$i"
        done ) &
    fi
    loops+=($!)
  done
  sleep 1
  busy="$(measure_get "$label-busy" "$port" "$token")"
  for i in "${loops[@]}"; do kill "$i" 2>/dev/null || true; wait "$i" 2>/dev/null || true; done
  scans="$(cat "$work"/scans-"$label"-* | wc -l)"
  stop_all

  {
    printf '  %s: ready %s s after start; one monitor scan over HTTP %.0f ms\n' "$label" "$ready" \
      "$(awk -v t="$one" 'BEGIN { print t * 1000 }')"
    printf '    %-30s %10s %10s %10s %10s\n' "GET /v1/timelines" "req/s" "p50" "p99" "max"
    # shellcheck disable=SC2086
    printf '    %-30s %10s %10s %10s %10s\n' "alone" $quiet
    # shellcheck disable=SC2086
    local what="monitor loops" unit="monitor scans"
    if [ -n "$heavy" ]; then what="heavy-read loops"; unit="rounds of the four heavy reads"; fi
    printf '    %-30s %10s %10s %10s %10s\n' "beside $monitors $what" $busy
    printf '    (%s %s completed during the %s s run and the 1 s before it)\n' "$scans" "$unit" "$duration"
  } >>"$work/summary"
}

# Serves big.db with one build for N streams ($1 label, $2 binary, $3 N; further arguments go to
# `serve`): sets $port and $token (read and write) for it, and adds its pid to $pids.
serve_for_streams() {
  local label="$1" exe="$2" n="$3" data log extra=()
  shift 3
  port="$(free_port)"
  data="$work/data-$label"
  log="$work/serve-$label.log"
  mkdir -p "$data"
  # Builds from before the caps have no --max-streams-per-traveller (and no cap).
  if "$exe" serve --help 2>/dev/null | grep -q -- '--max-streams-per-traveller'; then
    extra=(--max-streams-per-traveller "$n" --max-streams "$n")
  fi
  echo "==> $label: serve ($exe), $n streams"
  "$exe" --data-dir "$data" --database "sqlite://$work/big.db" serve \
    --listen "127.0.0.1:$port" --rate-limit 0 --address-rate-limit 0 "${extra[@]}" "$@" \
    >"$log" 2>&1 &
  pids+=($!)
  wait_ready "http://127.0.0.1:$port/readyz" "${pids[-1]}" "$log" 300
  token="$("$exe" --data-dir "$data" --database "sqlite://$work/big.db" token \
    --subject load --scope read,write --ttl 1h)"
}

# Opens $streams monitor streams on one build ($1 label, $2 binary) and measures the phases.
run_streams() {
  local label="$1" exe="$2" port mport token
  mport="$(free_port)"
  serve_for_streams "$label" "$exe" "$streams" --metrics-listen "127.0.0.1:$mport"
  {
    echo "  $label ($exe):"
    "$target/examples/monitor_streams" --base "http://127.0.0.1:$port" --token "$token" \
      --pid "${pids[-1]}" --metrics "http://127.0.0.1:$mport/metrics" --streams "$streams" \
      | sed 's/^/    /'
  } | tee -a "$work/summary"
  stop_all
}

# Measures $event_streams events streams on one build ($1 label, $2 binary); fails past budget.
run_event_streams() {
  local label="$1" exe="$2" port token rc=0
  serve_for_streams "$label" "$exe" "$event_streams"
  {
    echo "  $label ($exe):"
    "$target/examples/event_streams" --base "http://127.0.0.1:$port" --token "$token" \
      --pid "${pids[-1]}" --streams "$event_streams" 2>&1 | sed 's/^/    /'
    echo "    exit status: ${PIPESTATUS[0]}"
  } | tee -a "$work/summary"
  grep -q "exit status: 0" "$work/summary" || rc=1
  stop_all
  return "$rc"
}

if [ -n "$event_streams" ]; then
  status=0
  run_event_streams this "$bin" || status=1
  if [ -n "$compare" ]; then run_event_streams compared "$compare" || true; fi
  echo
  echo "events streams: $events events in primary, $event_streams unfiltered streams, loopback, SQLite"
  cat "$work/summary"
  exit "$status"
fi

if [ -n "$streams" ]; then
  run_streams this "$bin"
  [ -n "$compare" ] && run_streams compared "$compare"
  echo
  echo "monitor streams: $events events in primary, $streams streams of it, loopback, SQLite"
  cat "$work/summary"
  exit 0
fi

run_build this "$bin"
[ -n "$compare" ] && run_build compared "$compare"

echo
echo "monitor load: $events events in primary, wrk 1 thread, $connections connections, ${duration}s each, loopback, SQLite"
cat "$work/summary"

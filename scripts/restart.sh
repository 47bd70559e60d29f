#!/usr/bin/env bash
# A restart after a burst of writes, timed. For each run and each binary (alternated):
#   1. `chronoscope serve` on a fresh SQLite data directory (--rate-limit 0);
#   2. --duration (15) seconds of POST /v1/timeline/primary/events at full rate (wrk, 2 threads,
#      --connections 32), each adding one event;
#   3. the server is stopped: SIGTERM (a graceful stop), or SIGKILL with --signal KILL;
#   4. `serve` again on the same data, timed from spawning it to the first 200 from /readyz.
# Prints, per run: events written, how long the stop took, the records the start replayed
# after its snapshot (from its log), and the time to /readyz.
#
# usage: scripts/restart.sh [--binary BIN]... [--runs N] [--duration SECS]
#                           [--connections N] [--signal TERM|KILL|both]
#   --binary BIN   a chronoscope binary to measure (repeatable; default: this tree's release
#                  build); with several, each run measures each of them in turn.
# Env: CHRONOSCOPE_LOG is set to info for the servers (the start says where it began).
# wrk is installed from Debian's packages when missing. Every process this script starts is
# stopped when it ends, however it ends.
set -euo pipefail

runs=3
duration=15
connections=32
signals=(TERM)
binaries=()
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binaries+=("$2"); shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --signal)
      case "$2" in
        TERM|KILL) signals=("$2") ;;
        both) signals=(TERM KILL) ;;
        *) echo "restart.sh: --signal is TERM, KILL or both" >&2; exit 2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "restart.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$runs" "$duration" "$connections"; do
  case "$n" in ''|*[!0-9]*|0) echo "restart.sh: counts and durations are positive integers" >&2; exit 2 ;; esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
. "$repo/scripts/lib/load-common.sh"
ensure_wrk
if [ "${#binaries[@]}" -eq 0 ]; then
  echo "==> cargo build --release (chronoscope)"
  cargo build --release --locked --bin chronoscope
  binaries=("${CARGO_TARGET_DIR:-$repo/target}/release/chronoscope")
fi
for b in "${binaries[@]}"; do
  [ -x "$b" ] || { echo "restart.sh: $b is not an executable" >&2; exit 2; }
done

start_work_dir
export CHRONOSCOPE_LOG=info NO_COLOR=1

# Seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", e - s }'; }

# One measurement: $1 binary, $2 signal, $3 label. Appends a line to $work/summary.
measure() {
  local exe="$1" sig="$2" label="$3" data="$work/data-$3" port log pid token written
  local stop_began stopped began ready replayed snap
  rm -rf "$data"; mkdir -p "$data"
  port="$(free_port)"
  log="$work/$label-first.log"
  "$exe" --data-dir "$data" serve --listen "127.0.0.1:$port" --rate-limit 0 \
    --address-rate-limit 0 >"$log" 2>&1 &
  pid=$!; pids+=("$pid")
  wait_ready "http://127.0.0.1:$port/readyz" "$pid" "$log" 60
  token="$("$exe" --data-dir "$data" token --subject burst --scope read,write --ttl 1h)"
  cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = [[{"description":"A burst","time":"2000-01-01T00:00:00Z","location":"Loadtown"}]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
EOF
  wrk -t 2 -c "$connections" -d "${duration}s" -s "$work/post.lua" \
    "http://127.0.0.1:$port/v1/timeline/primary/events" >"$work/$label.wrk"
  if grep -qE 'Non-2xx' "$work/$label.wrk"; then
    echo "restart.sh: $label: some POSTs failed:" >&2; cat "$work/$label.wrk" >&2; return 1
  fi
  written="$(awk '/requests in/ { print $1 }' "$work/$label.wrk")"
  stop_began="$(now)"
  kill "-$sig" "$pid"
  wait "$pid" 2>/dev/null || true
  stopped="$(now)"
  log="$work/$label-second.log"
  began="$(now)"
  "$exe" --data-dir "$data" serve --listen "127.0.0.1:$port" --rate-limit 0 \
    --address-rate-limit 0 >"$log" 2>&1 &
  pid=$!; pids+=("$pid")
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "restart.sh: $label: the restart died:" >&2; tail "$log" >&2; return 1; }
    sleep 0.01
  done
  ready="$(now)"
  # Where the start began: the snapshot's record, or 0 (the whole log replayed).
  snap="$( (sed 's/\x1b\[[0-9;]*m//g' "$log" | grep "started from a snapshot" || true) \
    | grep -o "seq=[0-9]*" | head -n 1 | cut -d= -f2 || true)"
  # (wrk counts the answers it read; a few more may have been written as it stopped.)
  replayed=$(( written + 1 - ${snap:-0} ))
  [ "$replayed" -ge 0 ] || replayed=0
  stop_all
  printf '  %-10s %-5s %9s events  stop %6ss  tail ≈%8s records  to /readyz %6ss\n' \
    "$label" "$sig" "$written" "$(elapsed "$stop_began" "$stopped")" "$replayed" \
    "$(elapsed "$began" "$ready")" | tee -a "$work/summary"
}

for run in $(seq 1 "$runs"); do
  for sig in "${signals[@]}"; do
    for i in "${!binaries[@]}"; do
      echo "==> run $run, SIG$sig, binary $((i + 1)): ${binaries[$i]}"
      measure "${binaries[$i]}" "$sig" "bin$((i + 1))-r$run"
    done
  done
done

echo
echo "restart after ${duration}s of POST /v1/timeline/primary/events (wrk 2 threads, $connections connections), SQLite, loopback:"
for i in "${!binaries[@]}"; do echo "  bin$((i + 1)) = ${binaries[$i]}"; done
cat "$work/summary"

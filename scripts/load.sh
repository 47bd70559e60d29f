#!/usr/bin/env bash
# Load figures for the HTTP budgets of DESIGN.md §7, on loopback only:
#   bare      GET  /               examples/bare_hyper.rs (hyper 1.x, fixed small JSON body)
#   get       GET  /v1/timelines   chronoscope serve, authenticated
#   travels   POST /v1/travels     chronoscope serve, authenticated, every request a persisted journey
# and the ratios to bare (budgets: SQLite get >= 55 %, travels >= 25 %; PostgreSQL get >= 35 %,
# travels >= 20 %).
#
# usage: scripts/load.sh [--duration SECS] [--connections N] [--threads N]
#                        [--database URL] [--replicas N] [--binary PATH] [--check]
#                        [--summary FILE] [--against REV [--runs N] [--threshold PCT]]
#   --database URL  passed to `chronoscope serve` (env LOAD_DATABASE), e.g. postgres://...;
#                   default: a SQLite file in a fresh data directory.
#   --replicas N    start N servers on that one database (PostgreSQL only); wrk's threads are
#                   spread over them round-robin, as a load balancer would.
#   --binary PATH   measure this chronoscope binary (an older build, for a before/after in one
#                   sitting) instead of building target/release/chronoscope.
#   --check         exit 1 when a ratio is below its budget (default: only report it).
#   --summary FILE  also write to FILE, on one line: the three figures (bare get travels, req/s)
#                   and the two budgets that apply (get travels, % of bare).
#
# The regression guard: scripts/load.sh --against REV [--runs N] [--threshold PCT]
#   builds REV (a commit, tag or branch) from a `git archive` of it under target/against/ (kept,
#   with its binary, so a second run against the same REV builds nothing), then measures REV's
#   binary and this tree's alternately, N times each (default 3), with the options above. Prints
#   every run, the median of each, and this tree's medians as a share of REV's; exits 1 when
#   GET or POST falls below PCT % of REV's (default 95), or below the budgets of DESIGN §7.
# Env: LOAD_DURATION (10), LOAD_CONNECTIONS (32), LOAD_THREADS (2), LOAD_DATABASE, LOAD_REPLICAS (1),
# LOAD_BINARY.
# The load tool is wrk, installed from Debian's packages when missing. Every process this
# script starts is stopped when it ends, however it ends.
set -euo pipefail

duration="${LOAD_DURATION:-10}"
connections="${LOAD_CONNECTIONS:-32}"
threads="${LOAD_THREADS:-2}"
database="${LOAD_DATABASE:-}"
replicas="${LOAD_REPLICAS:-1}"
binary="${LOAD_BINARY:-}"
check=0
summary=""
against=""
runs=3
threshold=95
passthrough=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; passthrough+=("$1" "$2"); shift 2 ;;
    --connections) connections="$2"; passthrough+=("$1" "$2"); shift 2 ;;
    --threads) threads="$2"; passthrough+=("$1" "$2"); shift 2 ;;
    --database) database="$2"; passthrough+=("$1" "$2"); shift 2 ;;
    --replicas) replicas="$2"; passthrough+=("$1" "$2"); shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --check) check=1; shift ;;
    --summary) summary="$2"; shift 2 ;;
    --against) against="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --threshold) threshold="$2"; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "load.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$duration" "$connections" "$threads" "$replicas" "$runs" "$threshold"; do
  case "$n" in ''|*[!0-9]*|0) echo "load.sh: counts and durations are positive integers" >&2; exit 2 ;; esac
done
if [ "$replicas" -gt 1 ] && [[ "$database" != postgres://* && "$database" != postgresql://* ]]; then
  echo "load.sh: --replicas > 1 needs --database postgres://... (SQLite has one writer)" >&2
  exit 2
fi
pg=""
if [[ "$database" == postgres://* || "$database" == postgresql://* ]]; then pg=1; fi
if [ "$threads" -lt "$replicas" ]; then threads="$replicas"; fi
if [ "$connections" -lt "$threads" ]; then connections="$threads"; fi

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

. "$repo/scripts/lib/load-common.sh"
ensure_wrk

if [ -n "$against" ]; then
  exec "$repo/scripts/lib/load-against.sh" "$against" "$runs" "$threshold" "${passthrough[@]}"
fi

echo "==> cargo build --release (chronoscope, examples/bare_hyper)"
cargo build --release --locked --bin chronoscope --example bare_hyper
target="${CARGO_TARGET_DIR:-$repo/target}/release"
chronoscope="${binary:-$target/chronoscope}"
if [ ! -x "$chronoscope" ]; then echo "load.sh: $chronoscope is not an executable" >&2; exit 2; fi

start_work_dir

# Writes a wrk script: the request ($1 method, $2 body or empty, $3 token or empty) and, when
# there are several servers, one per thread round-robin ($4: space-separated ports).
wrk_script() {
  local file="$1" method="$2" body="$3" token="$4" ports="$5"
  {
    printf 'local ports = {'
    for p in $ports; do printf '%s,' "$p"; done
    printf '}\n'
    cat <<'LUA'
local next_server = 0
function setup(thread)
  local port = ports[(next_server % #ports) + 1]
  next_server = next_server + 1
  thread.addr = wrk.lookup("127.0.0.1", tostring(port))[1]
end
LUA
    printf 'wrk.method = "%s"\n' "$method"
    if [ -n "$body" ]; then
      printf 'wrk.body = [[%s]]\n' "$body"
      printf 'wrk.headers["Content-Type"] = "application/json"\n'
    fi
    if [ -n "$token" ]; then
      printf 'wrk.headers["Authorization"] = "Bearer %s"\n' "$token"
    fi
  } >"$file"
}

# CPU time (µs, user + system) used so far by the processes $@ (pids; gone ones count 0).
cpu_us() {
  local hz total=0 pid
  hz="$(getconf CLK_TCK)"
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo $((total * 1000000 / hz))
}
postgres_pids() { pgrep -x postgres 2>/dev/null || pgrep -f '^postgres' 2>/dev/null || true; }
# Transactions committed in the load's PostgreSQL database so far (every query outside an explicit
# transaction is one), or empty when it cannot be asked.
pg_xacts() {
  [ -n "$pg" ] || return 0
  psql "$database" -Atqc "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()" 2>/dev/null || true
}

# The sum over every replica's /metrics (ports in $metrics_ports) of the samples of metric $1
# (any labels), or 0 when no replica has one.
metric_sum() {
  local name="$1" port total=0 v
  for port in ${metrics_ports:-}; do
    v="$(curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null \
      | awk -v n="$name" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%.0f", s + 0 }')"
    total=$((total + ${v:-0}))
  done
  echo "$total"
}
# What the replicas' metrics say so far: appends, records appended, races lost, reads, store
# queries made for reads, times the writer's lease was taken, writes forwarded to its holder
# (space-separated).
engine_counts() {
  echo "$(metric_sum chronoscope_commit_batch_ops_count) $(metric_sum chronoscope_commit_batch_ops_sum)" \
    "$(metric_sum chronoscope_commit_races_lost_total) $(metric_sum chronoscope_reads_total)" \
    "$(metric_sum chronoscope_store_read_queries_total) $(metric_sum chronoscope_writer_lease_taken_total)" \
    "$(metric_sum chronoscope_writes_forwarded_total)"
}

# Runs wrk ($1 label, $2 url, $3 script) after a 2 s warm-up; prints requests/s on stdout.
# With the server's pids in $serve_pids, also writes to $work/$1.cost: server and database CPU
# µs per request and, on PostgreSQL, database transactions per request (warm-up excluded); with
# replicas' metrics ports in $metrics_ports, to $work/$1.engine: appends and the races they lost,
# and store queries per read.
# Non-2xx answers and socket errors are noted in $work/$1.errors: the figure is then not a
# clean measurement, which the summary says and the exit status reflects.
measure() {
  local label="$1" url="$2" script="$3" out="$work/$1.wrk"
  wrk -t "$threads" -c "$connections" -d 2s -s "$script" "$url" >/dev/null
  local server0 db0 x0 server1 db1 x1 requests e0="" e1="" each0="" each1="" pid
  [ -n "${metrics_ports:-}" ] && e0="$(engine_counts)"
  for pid in ${serve_pids:-}; do each0="$each0 $(cpu_us "$pid")"; done
  server0="$(cpu_us ${serve_pids:-})"; db0="$(cpu_us $(postgres_pids))"; x0="$(pg_xacts)"
  wrk -t "$threads" -c "$connections" -d "${duration}s" --latency -s "$script" "$url" >"$out"
  server1="$(cpu_us ${serve_pids:-})"; db1="$(cpu_us $(postgres_pids))"; x1="$(pg_xacts)"
  for pid in ${serve_pids:-}; do each1="$each1 $(cpu_us "$pid")"; done
  [ -n "${metrics_ports:-}" ] && e1="$(engine_counts)"
  if [ -n "$e0" ] && [ -n "$e1" ]; then
    echo "$e0 $e1" | awk '{
      appends = $8 - $1; records = $9 - $2; lost = $10 - $3; reads = $11 - $4; queries = $12 - $5
      turns = $13 - $6; forwarded = $14 - $7
      if (appends > 0) printf "%d appends, %.1f records each, %d (%.1f %%) lost a race", appends, records / appends, lost, 100 * lost / appends
      if (appends > 0 && turns > 0) printf ", the writer lease taken %d times", turns
      if (forwarded > 0) printf ", %d writes forwarded to its holder", forwarded
      if (appends > 0 && reads > 0) printf "; "
      if (reads > 0) printf "%d reads, %.3f store queries per read", reads, queries / reads
    }' >"$work/$label.engine"
  fi
  sed 's/^/    /' "$out" >&2
  requests="$(awk '/requests in/ {print $1}' "$out")"
  if [ -n "${serve_pids:-}" ] && [ "${requests:-0}" -gt 0 ]; then
    awk -v s=$((server1 - server0)) -v d=$((db1 - db0)) -v n="$requests" -v x0="$x0" -v x1="$x1" \
      -v each0="$each0" -v each1="$each1" \
      'BEGIN {
        printf "server %.1f µs", s / n
        k = split(each0, a); split(each1, b)
        if (k > 1) { printf " (replicas:"; for (i = 1; i <= k; i++) printf " %.1f", (b[i] - a[i]) / n; printf ")" }
        if (x0 != "") printf ", database %.1f µs, %.3f db transactions", d / n, (x1 - x0) / n
        printf " per request" }' \
      >"$work/$label.cost"
  fi
  { grep -E 'Non-2xx or 3xx responses' "$out" || true
    grep -E 'Socket errors:.*(connect|read|write|timeout) [1-9]' "$out" || true
  } | sed 's/^ *//' | paste -sd';' - >"$work/$label.errors"
  awk '/^Requests\/sec:/ {print $2}' "$out"
}
# The summary's note for a measurement: empty when clean.
errors_of() { local e; e="$(cat "$work/$1.errors")"; [ -z "$e" ] || printf '   [NOT CLEAN: %s]' "$e"; }

echo "==> bare hyper baseline"
port="$(free_port)"
"$target/examples/bare_hyper" "127.0.0.1:$port" >"$work/bare.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$port/" "${pids[-1]}" "$work/bare.log"
wrk_script "$work/bare.lua" GET "" "" "$port"
bare="$(measure bare "http://127.0.0.1:$port/" "$work/bare.lua")"
stop_all

serve_pids=""
metrics_ports=""
echo "==> chronoscope serve ($replicas replica(s))"
data="$work/data"
mkdir -p "$data"
db_args=()
[ -n "$database" ] && db_args=(--database "$database")
ports=""
for i in $(seq 1 "$replicas"); do
  port="$(free_port)"
  metrics_port="$(free_port)"
  # One data directory for all: replicas must share the token secret kept there.
  "$chronoscope" --data-dir "$data" "${db_args[@]}" serve --listen "127.0.0.1:$port" \
    --metrics-listen "127.0.0.1:$metrics_port" --rate-limit 0 --address-rate-limit 0 \
    >"$work/serve-$i.log" 2>&1 &
  pids+=($!)
  serve_pids="$serve_pids $!"
  wait_ready "http://127.0.0.1:$port/healthz" "${pids[-1]}" "$work/serve-$i.log"
  ports="$ports $port"
  metrics_ports="$metrics_ports $metrics_port"
done
first_port="${ports# }"
first_port="${first_port%% *}"
token="$("$chronoscope" --data-dir "$data" "${db_args[@]}" token --subject load --scope read,write --ttl 1h)"

wrk_script "$work/get.lua" GET "" "$token" "$ports"
get="$(measure get "http://127.0.0.1:$first_port/v1/timelines" "$work/get.lua")"
wrk_script "$work/travels.lua" POST '{"destination":"primary"}' "$token" "$ports"
travels="$(measure travels "http://127.0.0.1:$first_port/v1/travels" "$work/travels.lua")"
stop_all

# Never print a password that came in the URL.
shown_db="$(printf '%s' "${database:-sqlite (fresh)}" | sed -E 's#//[^/@]*@#//***@#')"
verdict=0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
meets() { awk -v r="$1" -v t="$2" 'BEGIN { exit !(r >= t) }'; }
get_ratio="$(ratio "$get" "$bare")"
travels_ratio="$(ratio "$travels" "$bare")"
get_budget=55; travels_budget=25
if [ -n "$pg" ]; then get_budget=35; travels_budget=20; fi
get_ok=yes; meets "$get_ratio" "$get_budget" || { get_ok=NO; verdict=1; }
travels_ok=yes; meets "$travels_ratio" "$travels_budget" || { travels_ok=NO; verdict=1; }

echo
echo "load: ${duration}s each, $threads wrk threads, $connections connections, loopback, $replicas replica(s), database: $shown_db"
printf '  %-34s %12s req/s%s\n' "bare hyper GET /" "$bare" "$(errors_of bare)"
printf '  %-34s %12s req/s   %6s %% of bare (budget >= %s %%: %s)%s\n' "GET /v1/timelines (auth)" "$get" "$get_ratio" "$get_budget" "$get_ok" "$(errors_of get)"
printf '  %-34s %12s req/s   %6s %% of bare (budget >= %s %%: %s)%s\n' "POST /v1/travels (auth, persisted)" "$travels" "$travels_ratio" "$travels_budget" "$travels_ok" "$(errors_of travels)"
for label in get travels; do
  [ -s "$work/$label.cost" ] && printf '  %-34s %s\n' "  cost of $label" "$(cat "$work/$label.cost")"
  [ -s "$work/$label.engine" ] && printf '  %-34s %s\n' "  engine during $label" "$(cat "$work/$label.engine")"
done

[ -n "$summary" ] && echo "$bare $get $travels $get_budget $travels_budget" >"$summary"

# Errors make every figure doubtful: always a failure. Budgets fail only with --check.
if [ -n "$(cat "$work"/*.errors)" ]; then
  echo "load.sh: some requests failed (see NOT CLEAN above); the figures are not clean measurements" >&2
  exit 1
fi
if [ "$check" = 1 ]; then exit "$verdict"; fi

# Sourced by the load scripts (scripts/load.sh, scripts/monitor-load.sh).

# Installs wrk from Debian's packages when it is missing.
ensure_wrk() {
  command -v wrk >/dev/null 2>&1 && return 0
  echo "==> installing wrk (Debian package)"
  local sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq wrk >/dev/null
}

# A free loopback port: bind port 0, read it back, release it.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits until $1 answers 200, or fails when the process $2 has died (showing the end of its log
# $3) or $4 seconds (default 30) have passed.
wait_ready() {
  local url="$1" pid="$2" log="$3" secs="${4:-30}" i
  for i in $(seq 1 $((secs * 5))); do
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$(basename "$0"): the process behind $url exited:" >&2; tail -n 20 "$log" >&2; return 1
    fi
    sleep 0.2
  done
  echo "$(basename "$0"): $url did not answer within $secs s" >&2; tail -n 20 "$log" >&2; return 1
}

# Makes the scratch directory $work and arranges that, however the script ends, every process
# whose pid is in $pids is stopped (stop_all does it on demand too) and $work is removed.
start_work_dir() {
  work="$(mktemp -d "${TMPDIR:-/tmp}/chronoscope-$(basename "$0" .sh).XXXXXX")"
  pids=()
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}
stop_all() {
  local pid
  for pid in "${pids[@]}"; do
    if kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; fi
  done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  local rc=$?
  stop_all
  rm -rf "$work"
  exit "$rc"
}

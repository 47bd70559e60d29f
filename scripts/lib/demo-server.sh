# Sourced by scripts that drive a throwaway `chronoscope serve --seed demo`:
#   start_demo_server NAME BIN KEEP
# makes a temp dir ($work, data in $work/data), starts BIN on a free loopback port ($port,
# $base), waits for /healthz, and on exit stops the server, shows the end of its log when the
# script failed, and removes $work unless KEEP is 1. NAME prefixes the messages.

start_demo_server() {
  demo_name="$1"
  local bin="$2"
  demo_keep="$3"
  work="$(mktemp -d "${TMPDIR:-/tmp}/chronoscope-$demo_name.XXXXXX")"
  server=""
  trap demo_server_cleanup EXIT
  trap 'exit 130' INT TERM

  # A free loopback port: bind port 0, read it back, release it.
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
  base="http://127.0.0.1:$port"
  data="$work/data"
  mkdir -p "$data"
  "$bin" --data-dir "$data" --seed demo serve --listen "127.0.0.1:$port" --rate-limit 0 >"$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 150); do
    curl -fsS -o /dev/null "$base/healthz" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { echo "$demo_name: the server exited before answering /healthz" >&2; exit 1; }
    sleep 0.2
  done
  curl -fsS -o /dev/null "$base/healthz"
}

demo_server_cleanup() {
  local rc=$?
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ] && [ -f "$work/server.log" ]; then
    echo "$demo_name: failed (exit $rc); last lines of the server log:" >&2
    tail -n 20 "$work/server.log" >&2 || true
  fi
  if [ "$demo_keep" = 1 ]; then echo "$demo_name: kept $work" >&2; else rm -rf "$work"; fi
  exit "$rc"
}

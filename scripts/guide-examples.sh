#!/usr/bin/env bash
# Runs the public Warp guides' requests verbatim (tests/guides/warp-guides.txt: method, path
# and JSON body character for character, only host and token substituted) with curl against a
# fresh `chronoscope serve --seed demo` on a free loopback port. Each request must answer 2xx
# and satisfy the guide's `check:` lines (jq, on the response body). A `capture: <jq> as <literal>`
# line takes a value from the answer (an id the service minted, such as an anchor's) and puts it
# in place of `<literal>` in the later requests of the same guide, as a person following the guide
# does with the id they got back; the bodies stay verbatim otherwise. Each guide runs as its own
# traveller, in file order. Any failure fails the run; every request runs either way.
#
# Env: CHRONOSCOPE_BIN (default: target/release/chronoscope, built here with cargo when it is
#      missing), GUIDES_KEEP=1 keeps the temp dir (server log, bodies, answers).
# Needs: curl, jq, python3 (to find a free port and split the file).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
guides="$repo/tests/guides/warp-guides.txt"

bin="${CHRONOSCOPE_BIN:-}"
if [ -z "$bin" ]; then
  cargo build --release --quiet --locked
  bin="${CARGO_TARGET_DIR:-$repo/target}/release/chronoscope"
fi
[ -x "$bin" ] || { echo "guide-examples: no binary at $bin" >&2; exit 1; }

# shellcheck source=lib/demo-server.sh
. "$repo/scripts/lib/demo-server.sh"
start_demo_server guide-examples "$bin" "${GUIDES_KEEP:-0}"

# Split the file into one directory per request: guide, step, method, path, checks, body.
python3 - "$guides" "$work/requests" <<'PY'
import os, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out)
blocks, cur = [], None
for line in open(src, encoding="utf-8").read().split("\n"):
    if line.startswith("=== "):
        cur = {"title": line[4:], "head": [], "body": []}
        blocks.append(cur)
    elif cur is None:
        continue
    elif not cur["body"] and (not cur["head"] or line.startswith(("check: ", "capture: "))):
        cur["head"].append(line)
    else:
        cur["body"].append(line)
for n, b in enumerate(blocks):
    body = "\n".join(b["body"]).rstrip("\n")
    guide, _, step = b["title"].partition(" | ")
    method, _, path = b["head"][0].partition(" ")
    d = os.path.join(out, f"{n:03d}")
    os.makedirs(d)
    for name, text in [("guide", guide), ("step", step), ("method", method), ("path", path),
                       ("checks", "".join(l[len("check: "):] + "\n"
                                          for l in b["head"][1:] if l.startswith("check: "))),
                       ("captures", "".join(l[len("capture: "):] + "\n"
                                            for l in b["head"][1:] if l.startswith("capture: "))),
                       ("body", body)]:
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.write(text)
PY

passed=0
failed=0
current_guide=""
token=""
for dir in "$work"/requests/*/; do
  guide="$(cat "$dir/guide")"
  if [ "$guide" != "$current_guide" ]; then
    current_guide="$guide"
    # Captured values belong to the guide that captured them.
    : >"$work/captured"
    subject="guide-$(basename "$guide" .md)"
    # The security guide sets primary's access control: that needs an operator (the admin
    # scope), and it runs last so its list does not lock the other guides' travellers out.
    case "$guide" in
      *security-in-time-travel.md) scope=read,write,admin ;;
      *) scope=read,write ;;
    esac
    token="$("$bin" --data-dir "$data" token --subject "$subject" --scope "$scope" --ttl 1h)"
    printf '\n## %s (traveller %s, scope %s)\n' "$guide" "$subject" "$scope"
  fi
  method="$(cat "$dir/method")"
  path="$(cat "$dir/path")"
  cp "$dir/body" "$dir/sent"
  while IFS=$'\t' read -r literal value; do
    [ -z "$literal" ] && continue
    path="${path//"$literal"/"$value"}"
    LITERAL="$literal" VALUE="$value" python3 -c '
import os, sys
p = sys.argv[1]
text = open(p, encoding="utf-8").read()
open(p, "w", encoding="utf-8").write(text.replace(os.environ["LITERAL"], os.environ["VALUE"]))
' "$dir/sent"
  done <"$work/captured"
  printf -- '-- %s: curl -X %s %s -d @body\n' "$(cat "$dir/step")" "$method" "$path"
  status="$(curl -sS -X "$method" "$base$path" \
    -H "Content-Type: application/json" \
    -H "Authorization: Bearer $token" \
    --data-binary @"$dir/sent" -o "$dir/answer" -w '%{http_code}' || echo 000)"
  ok=1
  case "$status" in
    2??) ;;
    *) ok=0; echo "   FAIL: status $status" ;;
  esac
  if [ "$ok" = 1 ]; then
    while IFS= read -r check; do
      [ -z "$check" ] && continue
      if ! jq -e "$check" "$dir/answer" >/dev/null 2>&1; then
        ok=0
        echo "   FAIL: not true of the answer: $check"
      fi
    done <"$dir/checks"
    while IFS= read -r capture; do
      [ -z "$capture" ] && continue
      expr="${capture% as *}"
      literal="${capture##* as }"
      value="$(jq -r "$expr // empty" "$dir/answer" 2>/dev/null || true)"
      if [ -z "$value" ]; then
        ok=0
        echo "   FAIL: nothing to capture with $expr"
      else
        printf '%s\t%s\n' "$literal" "$value" >>"$work/captured"
        echo "   captured $literal = $value"
      fi
    done <"$dir/captures"
  fi
  if [ "$ok" = 1 ]; then
    passed=$((passed + 1))
    echo "   $status ok"
  else
    failed=$((failed + 1))
    echo "   answer: $(head -c 600 "$dir/answer")"
  fi
done

echo
echo "Warp guide requests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

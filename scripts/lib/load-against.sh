#!/usr/bin/env bash
# scripts/load.sh --against REV: this tree's build measured against REV's, alternated, in one
# sitting. Called by load.sh as: load-against.sh REV RUNS THRESHOLD [load.sh options...]
# (see load.sh --help). Exits 1 when this tree's median GET or POST is below THRESHOLD % of
# REV's, or below the budgets of DESIGN §7; 2 when REV cannot be built.
set -euo pipefail

rev="$1" runs="$2" threshold="$3"
shift 3
options=("$@")
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

sha="$(git rev-parse --verify --quiet "$rev^{commit}" || true)"
if [ -z "$sha" ]; then
  echo "load.sh: --against $rev is not a commit of this repository (git rev-parse)" >&2
  exit 2
fi
short="${sha:0:12}"
target="${CARGO_TARGET_DIR:-$repo/target}"
# REV's sources (a git archive, not a worktree: nothing is registered in .git) and its own
# target directory, kept so that measuring against the same REV again builds nothing.
place="$target/against"
src="$place/src-$short"
old="$place/chronoscope-$short"
if [ ! -x "$old" ]; then
  echo "==> building $rev ($short) in $src"
  rm -rf "$src"
  mkdir -p "$src"
  git archive "$sha" | tar -x -C "$src"
  (cd "$src" && CARGO_TARGET_DIR="$place/target" cargo build --release --locked --bin chronoscope) || {
    echo "load.sh: $rev ($short) does not build" >&2
    exit 2
  }
  cp "$place/target/release/chronoscope" "$old"
fi

echo "==> cargo build --release (this tree)"
cargo build --release --locked --bin chronoscope --example bare_hyper
new="$target/release/chronoscope"
# A copy, so a build during the sitting cannot change what is measured halfway.
cp "$new" "$place/chronoscope-this-tree"
new="$place/chronoscope-this-tree"

results="$(mktemp -d "${TMPDIR:-/tmp}/chronoscope-against.XXXXXX")"
trap 'rm -rf "$results"' EXIT
# Alternated: REV, this tree, REV, this tree...
for run in $(seq 1 "$runs"); do
  for side in old new; do
    bin="$old"; [ "$side" = new ] && bin="$new"
    echo "==> run $run of $runs: $side ($bin)"
    "$repo/scripts/load.sh" "${options[@]}" --binary "$bin" --summary "$results/$side-$run" \
      | sed -n '/^load:/,$p'
  done
done

# Columns of a run's summary (load.sh --summary): bare get travels (req/s), then the get and
# travels budgets (% of bare) that apply to the store measured.
# The median of the numbers on stdin, printed with format $1.
median() {
  sort -n | awk -v f="$1" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf f "\n", m }'
}
column() { local side="$1" col="$2" f; for f in "$results/$side"-*; do awk -v c="$col" '{ print $c }' "$f"; done; }
# A run's figure as a share of the same run's bare hyper, in per cent.
share() { local side="$1" col="$2" f; for f in "$results/$side"-*; do awk -v c="$col" '{ printf "%.1f\n", 100 * $c / $1 }' "$f"; done; }

read -r _ _ _ get_budget travels_budget <"$results/new-1"

echo
echo "against $rev ($short), $runs alternated runs each (req/s; in brackets, % of the same run's bare hyper):"
verdict=0
for col in 2 3; do
  name="GET /v1/timelines"; budget="$get_budget"
  [ "$col" = 3 ] && { name="POST /v1/travels"; budget="$travels_budget"; }
  line() {
    local side="$1" f out=""
    for f in $(seq 1 "$runs"); do
      out="$out $(awk -v c="$col" '{ printf "%.0f (%.1f %%)", $c, 100 * $c / $1 }' "$results/$side-$f"),"
    done
    echo "${out%,}"
  }
  old_median="$(column old "$col" | median %.0f)"
  new_median="$(column new "$col" | median %.0f)"
  old_share="$(share old "$col" | median %.1f)"
  new_share="$(share new "$col" | median %.1f)"
  ratio="$(awk -v a="$new_median" -v b="$old_median" 'BEGIN { printf "%.1f", 100 * a / b }')"
  printf '  %s\n' "$name"
  printf '    %-12s %s\n' "$short" "$(line old)" "this tree" "$(line new)"
  printf '    medians: %s %s req/s (%s %% of bare), this tree %s req/s (%s %% of bare, budget >= %s %%)\n' \
    "$short" "$old_median" "$old_share" "$new_median" "$new_share" "$budget"
  ok=yes
  if ! awk -v r="$ratio" -v t="$threshold" 'BEGIN { exit !(r >= t) }'; then ok="NO (threshold $threshold %)"; verdict=1; fi
  if ! awk -v r="$new_share" -v t="$budget" 'BEGIN { exit !(r >= t) }'; then ok="$ok; below budget"; verdict=1; fi
  printf '    this tree / %s: %s %%: %s\n' "$short" "$ratio" "$ok"
done
exit "$verdict"

#!/usr/bin/env bash
# What a large indicator set costs (issue 58: 1,000,000 mixed indicators load in <= 5 s and
# take <= 150 MiB): wall time and peak RSS of
#
#   add    `weir intel add --set big FILE` of N indicators into an empty set (read the Zeek
#          Intel file, build the set, write its file);
#   list   `weir intel list` (load the stored set: parse, check, index);
#   match  `weir intel match big` against a small generated archive (load the set, build the
#          matcher, one retro search).
#
#   bench/intel_memory.sh [WEIR...]   (default: this repo's release build)
#
# Each binary runs every step REPS times (default 3), binaries alternating within each
# repetition; the medians are printed per binary. N (default 1,000,000) indicators are
# generated once, deterministically, into $BENCH_DIR/intel-N.dat: addresses, subnets, domains,
# URLs, file hashes (MD5, SHA-1, SHA-256 lengths) and software, one sixth each, with a
# `meta.source` drawn from 12 feeds (repeating, as real feeds' do), a `meta.desc` on every
# third (64 distinct texts) plus a unique one on 1 in 50, and a confidence on half. The set
# file each binary writes is kept as $BENCH_DIR/intel-set-K.json (K: the binary's position),
# so that two binaries' files can be compared with `cmp`.
#
# The release build, as the session notes say (build weir and generate together):
#   CARGO_TARGET_DIR=target-rel CARGO_PROFILE_RELEASE_LTO=false \
#     CARGO_PROFILE_RELEASE_CODEGEN_UNITS=8 cargo build --release --bin weir --example generate
set -euo pipefail
. "$(dirname "$0")/env.sh"
N=${N:-1000000}
REPS=${REPS:-3}
EVENTS=${EVENTS:-200000}
gen=${GEN:-$target/release/examples/generate}
if [ $# -eq 0 ]; then
  set -- "$weir"
fi
for w in "$@"; do [ -x "$w" ] || { echo "no binary $w" >&2; exit 1; }; done
[ -x "$gen" ] || { echo "no generator $gen (GEN=...; build --example generate)" >&2; exit 1; }
intel=$(bash "$root/bench/intel_feed.sh" "$N")

log="$work/intel-events-$EVENTS.log"
[ -s "$log" ] || "$gen" --events "$EVENTS" --log mix > "$log"

out=$(mktemp)
dbs=()
trap 'rm -rf "$out" "${dbs[@]}"' EXIT
k=0
for w in "$@"; do
  k=$((k + 1))
  db="$work/intel-db-$k"
  dbs+=("$db")
  rm -rf "$db"
  "$w" import -q --db "$db" "$log"
done

# `/usr/bin/time` prints "STEP K wall maxrss_kB" to $out.
timed() { /usr/bin/time -o "$out" -a -f "$1 $2 %e %M" "${@:3}"; }
for r in $(seq "$REPS"); do
  k=0
  for w in "$@"; do
    k=$((k + 1))
    db="$work/intel-db-$k"
    rm -f "$db/intel/big.json"
    timed add "$k" "$w" intel add --db "$db" --set big "$intel" 2>/dev/null
    cp "$db/intel/big.json" "$work/intel-set-$k.json"
    timed list "$k" "$w" intel list --db "$db" > /dev/null
    timed match "$k" "$w" intel match --db "$db" --to json big > "$work/intel-matches-$k.json" 2>/dev/null
  done
done

python3 - "$out" "$N" "$@" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4:
        runs[(p[0], int(p[1]))].append((float(p[2]), int(p[3])))
print(f"{int(sys.argv[2]):,} indicators; medians of {len(runs[('add', 1)])} runs")
print(f"{'binary':<50} {'step':<6} {'wall s':>7} {'max RSS MiB':>12}")
for k, w in enumerate(sys.argv[3:], 1):
    for step in ("add", "list", "match"):
        r = runs[(step, k)]
        wall = statistics.median(x[0] for x in r)
        rss = statistics.median(x[1] for x in r) / 1024
        print(f"{w[-50:]:<50} {step:<6} {wall:>7.2f} {rss:>12.1f}")
PY
echo "matches: $(wc -l < "$work/intel-matches-1.json") lines of $work/intel-matches-1.json"

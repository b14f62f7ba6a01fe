#!/usr/bin/env bash
# The first screen of `weir serve`'s page on the W1000 archive (issue 59: "first screen of the
# W1000 archive in under a second").
#
#   bench/page.sh [N]        N copies of conn.log.gz (default 1000: W1000, 8,462,000 events)
#   WEIR=target/release/weir REPS=7 bench/page.sh
#
# Imports the copies into $BENCH_DIR/w$N.db once (kept between runs), serves it, and runs
# bench/page_first_screen.py (Playwright on Debian's chromium) REPS times: milliseconds from
# navigation to the first results drawn, in fresh browser contexts, and their median.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-1000}
REPS=${REPS:-7}
work=${BENCH_DIR:-/tmp/weir-bench-page}
corpus=${WEIR_CORPUS:-$root/../shared/data/zeek}
mkdir -p "$work"
if [ -z "${WEIR:-}" ]; then
  (cd "$root" && cargo build --quiet --release --bin weir)
  WEIR=${CARGO_TARGET_DIR:-$root/target}/release/weir
fi
db="$work/w$N.db"
if [ ! -d "$db" ]; then
  mkdir -p "$work/w$N"
  for i in $(seq 1 "$N"); do ln -sf "$corpus/conn.log.gz" "$work/w$N/conn$i.log.gz"; done
  "$WEIR" import --quiet --db "$db.tmp" "$work/w$N"/*.log.gz
  mv "$db.tmp" "$db"
fi
"$WEIR" info --db "$db" | head -3
port=$((20000 + RANDOM % 20000))
"$WEIR" serve --db "$db" --listen "127.0.0.1:$port" 2> "$work/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q "serving" "$work/serve.log" 2>/dev/null && break
  sleep 0.1
done
python3 "$root/bench/page_first_screen.py" "http://127.0.0.1:$port/" "$REPS"

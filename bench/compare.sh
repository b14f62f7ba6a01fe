#!/usr/bin/env bash
# Side-by-side import benchmark: weir against the decompression floor (pigz, gzip) and DuckDB.
#
#   bench/compare.sh [N]      N copies of conn.log.gz (default 1000: the W1000 workload)
#   REPS=5 bench/compare.sh   repetitions per case (default 3); medians are reported
#   BASELINE=/tmp/weir-old bench/compare.sh   also runs every weir case with that binary (built
#                             from an earlier commit), interleaved, and prints the ratios
#   SKIP_DUCKDB=1             leaves DuckDB out
#   EVE_FLOWS=2600000         flows of the Suricata EVE rows (default 2,600,000: about 5 M
#                             events); EVE_FLOWS=0 leaves them out
#   INTEL_N=1000000           indicators of the live-matching row (import with a set loaded);
#                             INTEL_N=0 leaves it out
#
# The workload comes from ../shared/data/zeek (or $WEIR_CORPUS); without it, from the repo's own
# generator (examples/generate.rs) with the same event count. Work files go to $BENCH_DIR
# (default /tmp/weir-bench). Prints, per case: median wall seconds, events/s, the ratio to
# `pigz -dc` measured in the same run, and peak RSS.
set -euo pipefail
N=${1:-1000}
REPS=${REPS:-3}
. "$(dirname "$0")/env.sh"

bash "$root/bench/setup.sh"
bench_build --example generate

gz="$work/w$N.log.gz"
if [ ! -s "$gz" ]; then
  if [ -f "$corpus/conn.log.gz" ]; then
    echo "building W$N from $corpus/conn.log.gz" >&2
    for _ in $(seq "$N"); do cat "$corpus/conn.log.gz"; done > "$gz.tmp"
  else
    echo "note: corpus absent; generating W$N from examples/generate.rs" >&2
    "$target/release/examples/generate" --events $((N * 8462)) --log conn | gzip -c > "$gz.tmp"
  fi
  mv "$gz.tmp" "$gz"
fi
txt="$work/w$N.log"
[ -s "$txt" ] || gzip -dc "$gz" > "$txt"
one="$work/w$N.single.log.gz"
if [ ! -s "$one" ]; then
  if command -v pigz >/dev/null; then pigz -c "$txt" > "$one"; else gzip -c "$txt" > "$one"; fi
fi
events=$(grep -vc '^#' "$txt" || true)
echo "workload: $gz ($(du -h "$gz" | cut -f1) gzip, $(du -h "$txt" | cut -f1) text, $events events)"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r)"
echo

TIME=/usr/bin/time
declare -A MED RSS
# once CMD: one timed run; sets T (wall seconds) and R (peak RSS in KiB, 0 without GNU time).
once() {
  rm -rf "$work/db" "$work/out.parquet"
  # Start each run with the previous one's writes on disk, so runs do not pay for each other.
  sync
  local t0 t1
  t0=$(date +%s.%N)
  if [ -x "$TIME" ]; then
    "$TIME" -f '%M' -o "$work/rss" bash -c "$1" >/dev/null 2>"$work/err" || { echo "failed: $1"; cat "$work/err"; return 1; }
    R=$(tail -1 "$work/rss")
  else
    bash -c "$1" >/dev/null 2>"$work/err" || { echo "failed: $1"; cat "$work/err"; return 1; }
    R=0
  fi
  t1=$(date +%s.%N)
  T=$(echo "$t1 - $t0" | bc -l)
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
report() {
  printf '%-34s %8.3f s  %12.0f events/s  peak RSS %6d MiB\n' "$1" "${MED[$1]}" \
    "$(echo "$events / ${MED[$1]}" | bc -l)" "${RSS[$1]}"
}
# run NAME CMD: REPS runs, median wall time and the largest peak RSS.
run() {
  local times=() rss=0
  for _ in $(seq "$REPS"); do
    once "$2" || return 1
    times+=("$T"); [ "$R" -gt "$rss" ] && rss=$R
  done
  MED[$1]=$(median "${times[@]}"); RSS[$1]=$((rss / 1024)); report "$1"
}
# run2 NAME1 CMD1 NAME2 CMD2: like run for both, alternating their runs.
run2() {
  local ta=() tb=() ra=0 rb=0
  for _ in $(seq "$REPS"); do
    once "$2" || return 1; ta+=("$T"); [ "$R" -gt "$ra" ] && ra=$R
    once "$4" || return 1; tb+=("$T"); [ "$R" -gt "$rb" ] && rb=$R
  done
  MED[$1]=$(median "${ta[@]}"); RSS[$1]=$((ra / 1024)); report "$1"
  MED[$3]=$(median "${tb[@]}"); RSS[$3]=$((rb / 1024)); report "$3"
}

command -v pigz >/dev/null && run "pigz -dc" "pigz -dc '$gz'"
run "gzip -dc" "gzip -dc '$gz'"
cases=("gzip file|'$gz'" "text file|'$txt'" "text on stdin|< '$txt'" "1-member gzip, stdin|< '$one'")
for c in "${cases[@]}"; do
  if [ -n "${BASELINE:-}" ]; then
    # Alternate the two builds run by run, so that a drifting machine favours neither.
    run2 "weir import (${c%%|*})" "'$weir' import --quiet --db '$work/db' ${c#*|}" \
      "baseline import (${c%%|*})" "'$BASELINE' import --quiet --db '$work/db' ${c#*|}"
  else
    run "weir import (${c%%|*})" "'$weir' import --quiet --db '$work/db' ${c#*|}"
  fi
done
# Live matching (issue 58): the same gzip file into an archive that holds a set of
# INTEL_N (default 1,000,000) mixed indicators (bench/intel_feed.sh), so that every commit is
# matched against it; the set's file is made once and hard-linked into each run's archive.
INTEL_N=${INTEL_N:-1000000}
if [ "$INTEL_N" -gt 0 ]; then
  setdb="$work/intel-set-db-$INTEL_N"
  if [ ! -s "$setdb/intel/big.json" ]; then
    rm -rf "$setdb" && mkdir -p "$setdb"
    "$weir" intel add --db "$setdb" --set big "$(bash "$root/bench/intel_feed.sh" "$INTEL_N")" >/dev/null 2>&1
  fi
  live="mkdir -p '$work/db/intel' && ln '$setdb/intel/big.json' '$work/db/intel/big.json' && '$weir' import --quiet --db '$work/db' '$gz'"
  run2 "weir import (gzip file, no set)" "'$weir' import --quiet --db '$work/db' '$gz'" \
    "weir import (gzip file, $INTEL_N indicators)" "$live"
  printf 'live matching cost (gzip file, %s indicators): %+.0f%% (target <= +15%%)\n' "$INTEL_N" \
    "$(echo "(${MED["weir import (gzip file, $INTEL_N indicators)"]} / ${MED["weir import (gzip file, no set)"]} - 1) * 100" | bc -l)"
fi
if [ -n "${SKIP_DUCKDB:-}" ]; then
  echo "note: SKIP_DUCKDB set: DuckDB skipped"
elif python3 -c 'import duckdb' 2>/dev/null; then
  q="COPY (SELECT * FROM read_csv('$gz', delim='\t', comment='#', nullstr='-', header=false)) TO '$work/out.parquet' (FORMAT parquet)"
  run "duckdb read_csv -> parquet (gzip)" "python3 -c \"import duckdb; duckdb.sql(\\\"$q\\\")\""
else
  echo "note: python3 duckdb not importable: DuckDB skipped"
fi

# Suricata EVE (issue 57): the generator's sensor data (examples/generate --sensor: flow,
# dns, http, tls, fileinfo, alert, anomaly, stats), gzipped; weir against DuckDB's
# read_json into its native table (a database file) and into zstd Parquet.
EVE_FLOWS=${EVE_FLOWS:-2600000}
if [ "$EVE_FLOWS" -gt 0 ]; then
  eve="$work/eve$EVE_FLOWS.json.gz"
  if [ ! -s "$eve" ]; then
    "$target/release/examples/generate" --events "$EVE_FLOWS" --sensor "$work/sensor$EVE_FLOWS"
    gzip -c "$work/sensor$EVE_FLOWS/eve.json" > "$eve.tmp" && mv "$eve.tmp" "$eve"
    rm -rf "$work/sensor$EVE_FLOWS"
  fi
  eve_events=$(gzip -dc "$eve" | wc -l)
  echo
  echo "EVE workload: $eve ($(du -h "$eve" | cut -f1) gzip, $eve_events events)"
  saved=$events; events=$eve_events
  run "weir import (EVE, gzip file)" "'$weir' import --quiet --from suricata --db '$work/db' '$eve'"
  eve_archive=$(du -sk "$work/db" | cut -f1)
  if [ -z "${SKIP_DUCKDB:-}" ] && python3 -c 'import duckdb' 2>/dev/null; then
    qt="CREATE TABLE eve AS SELECT * FROM read_json('$eve')"
    run "duckdb read_json -> table (EVE)" "rm -f '$work/eve.duckdb'; python3 -c \"import duckdb; duckdb.connect('$work/eve.duckdb').execute(\\\"$qt\\\")\""
    qp="COPY (SELECT * FROM read_json('$eve')) TO '$work/out.parquet' (FORMAT parquet, COMPRESSION zstd)"
    run "duckdb read_json -> zstd parquet (EVE)" "python3 -c \"import duckdb; duckdb.sql(\\\"$qp\\\")\""
    best=${MED["duckdb read_json -> table (EVE)"]}
    other=${MED["duckdb read_json -> zstd parquet (EVE)"]}
    if (( $(echo "$other < $best" | bc -l) )); then best=$other; fi
    printf 'DuckDB (faster of the two) / weir (EVE):  %.2f (target >= 2)\n' "$(echo "$best / ${MED["weir import (EVE, gzip file)"]}" | bc -l)"
  fi
  printf 'weir archive / eve.json.gz (EVE):         %.2f (target <= 1)\n' "$(echo "$eve_archive / $(du -k "$eve" | cut -f1)" | bc -l)"
  events=$saved
fi

echo
floor=${MED["pigz -dc"]:-${MED["gzip -dc"]}}
w=${MED["weir import (gzip file)"]}
printf 'weir (gzip file) / pigz -dc:       %.2f (target <= 0.80)\n' "$(echo "$w / $floor" | bc -l)"
if [ -n "${MED["duckdb read_csv -> parquet (gzip)"]:-}" ]; then
  printf 'DuckDB / weir (gzip file):         %.2f (target >= 5)\n' "$(echo "${MED["duckdb read_csv -> parquet (gzip)"]} / $w" | bc -l)"
fi
if [ -n "${BASELINE:-}" ]; then
  echo
  for c in "${cases[@]}"; do
    n=${c%%|*}
    printf '%-34s %.3f (this / baseline, median)\n' "$n:" \
      "$(echo "${MED["weir import ($n)"]} / ${MED["baseline import ($n)"]}" | bc -l)"
  done
fi

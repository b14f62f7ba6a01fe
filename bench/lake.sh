#!/usr/bin/env bash
# The Parquet lake benchmark: W<N> imported, exported to a lake, and queried by DuckDB,
# DataFusion and Spark (local mode), whose answers must agree with `weir count`.
#
#   bench/lake.sh [N]     N copies of conn.log.gz (default 1000: W1000, built by bench/compare.sh
#                         in $BENCH_DIR, default /tmp/weir-bench; built here the same way if absent)
#   REPS=5 bench/lake.sh  repetitions of the timed cases (default 3); medians are reported
#   KEEP=1 bench/lake.sh  keeps the archive and DuckDB's file (about 0.75 GB for W1000); the
#                         lake itself is always kept
#
# Installs its own PyPI packages (duckdb, datafusion, pyspark, pyarrow; Spark needs Java 17).
# Prints: median seconds of `weir import`, `weir export --to parquet` (events/s) and DuckDB's
# read_csv of the .log.gz into zstd Parquet; the sizes of the lake and of DuckDB's file; the
# export's peak memory beyond the mapped archive for a tenth and all of the events at three
# row-group sizes (memory follows the row groups, not the events); the export to a local S3
# server (moto[server]) against the local disk, seconds and peak memory (NO_S3=1 skips it); then per engine the three queries' answers and times, checked against `weir count` (exit 1 on a
# disagreement).
set -euo pipefail
N=${1:-1000}
REPS=${REPS:-3}
. "$(dirname "$0")/env.sh"

python3 -m pip install --quiet --disable-pip-version-check duckdb datafusion pyspark pyarrow
bench_build

gz="$work/w$N.log.gz"
if [ ! -s "$gz" ]; then
  echo "building W$N from $corpus/conn.log.gz" >&2
  for _ in $(seq "$N"); do cat "$corpus/conn.log.gz"; done > "$gz.tmp"
  mv "$gz.tmp" "$gz"
fi
db="$work/lake-w$N.db"
lake="$work/lake-w$N"
duck="$work/lake-w$N.duckdb.parquet"
echo "workload: $gz ($(du -h "$gz" | cut -f1)); machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"

if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$db" "$duck"' EXIT; fi

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
# timed CMD: wall seconds of one run (output to /dev/null, stderr kept in $work/lake.err).
timed() {
  sync
  local t0 t1
  t0=$(date +%s.%N)
  bash -c "$1" >/dev/null 2>"$work/lake.err" || { echo "failed: $1"; cat "$work/lake.err"; exit 1; }
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}

imp=() exp=() ddb=()
for _ in $(seq "$REPS"); do
  rm -rf "$db" "$lake" "$duck"
  imp+=("$(timed "'$weir' import --quiet --db '$db' '$gz'")")
  exp+=("$(timed "'$weir' export --db '$db' --to parquet --output '$lake'")")
  ddb+=("$(timed "python3 -c \"import duckdb; duckdb.execute(\\\"COPY (SELECT * FROM read_csv('$gz', delim='\t', comment='#', nullstr='-', header=false)) TO '$duck' (FORMAT parquet, COMPRESSION zstd)\\\")\"")")
done
events=$("$weir" count --db "$db")
mi=$(median "${imp[@]}") me=$(median "${exp[@]}") md=$(median "${ddb[@]}")
echo
printf '%-44s %8.3f s\n' "weir import (gzip file)" "$mi"
printf '%-44s %8.3f s  %6.2f M events/s (target >= 3)\n' "weir export --to parquet" "$me" "$(echo "$events / $me / 1000000" | bc -l)"
printf '%-44s %8.3f s  (target < DuckDB)\n' "weir import + export --to parquet" "$(echo "$mi + $me" | bc -l)"
printf '%-44s %8.3f s\n' "DuckDB read_csv -> zstd Parquet" "$md"
printf '%-44s %8.2f (runs: import %s; export %s; duckdb %s)\n' "DuckDB / (weir import + export)" \
  "$(echo "$md / ($mi + $me)" | bc -l)" "${imp[*]}" "${exp[*]}" "${ddb[*]}"
ls=$(du -sb "$lake" | cut -f1) ds=$(stat -c %s "$duck")
printf '%-44s %8.1f MB in %d files\n' "lake size" "$(echo "$ls / 1000000" | bc -l)" "$(find "$lake" -name '*.parquet' | wc -l)"
printf '%-44s %8.1f MB (lake / DuckDB: %.2f, target <= 1)\n' "DuckDB zstd Parquet size" "$(echo "$ds / 1000000" | bc -l)" "$(echo "$ls / $ds" | bc -l)"

# Peak memory of the export without the archive's mapped pages (RssAnon, sampled every 20 ms):
# it follows the row-group size, not the number of events exported.
peak_anon() {
  "$@" >/dev/null 2>&1 &
  local pid=$! peak=0 v
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^RssAnon/{print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" -gt "$peak" ]; then peak=$v; fi
    sleep 0.02
  done
  wait "$pid"
  echo $((peak / 1024))
}
echo
echo "export peak memory (MB of RssAnon: the mapped archive not counted)"
printf '%-16s %14s %14s %14s\n' "events / rows per row group:" 30720 122880 491520
for n in $((events / 10)) "$events"; do
  row="$n"
  for rg in 30720 122880 491520; do
    rm -rf "$lake.mem"
    row="$row $(peak_anon "$weir" export --db "$db" --to parquet -n "$n" --row-group-size "$rg" --output "$lake.mem")"
  done
  # shellcheck disable=SC2086
  printf '%-16s %14s %14s %14s\n' $row
done
rm -rf "$lake.mem"

# The export to S3: a local S3 server (moto's, in memory, on 127.0.0.1) against the local disk,
# REPS runs each: median seconds, events/s and the largest peak RssAnon. moto is Python: this
# measures weir's upload path bounded by moto's speed, not by S3's.
if [ -z "${NO_S3:-}" ]; then
  python3 -m pip install --quiet --disable-pip-version-check "moto[server]" boto3
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m moto.server -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  moto=$!
  export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
  for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  python3 -c "import boto3; boto3.client('s3').create_bucket(Bucket='bench')"
  # timed_peak CMD...: "seconds peakMB" of one run.
  timed_peak() {
    local t0 t1 p
    t0=$(date +%s.%N)
    p=$(peak_anon "$@")
    t1=$(date +%s.%N)
    echo "$(echo "$t1 - $t0" | bc -l) $p"
  }
  echo
  echo "export to a local S3 server (moto) and to the local disk: median of $REPS, largest peak RssAnon"
  printf '%-12s %9s %14s %10s\n' output seconds "M events/s" "peak MB"
  for target in disk s3; do
    secs=() peak=0
    for i in $(seq "$REPS"); do
      rm -rf "$lake.s3cmp"
      out="$lake.s3cmp"
      [ "$target" = s3 ] && out="s3://bench/run$i"
      read -r t p < <(timed_peak "$weir" export --db "$db" --to parquet --output "$out")
      secs+=("$t")
      if [ "$p" -gt "$peak" ]; then peak=$p; fi
    done
    m=$(median "${secs[@]}")
    printf '%-12s %9.3f %14.2f %10s  (runs: %s)\n' "$target" "$m" "$(echo "$events / $m / 1000000" | bc -l)" "$peak" "${secs[*]}"
  done
  rm -rf "$lake.s3cmp"
  kill "$moto" 2>/dev/null || true
  wait "$moto" 2>/dev/null || true
  unset AWS_ENDPOINT_URL AWS_ALLOW_HTTP AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
fi

# The three queries, answered by weir from the archive and by each engine from the lake.
uid=$("$weir" export --db "$db" --to json -n 1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["uid"])')
q1=""
for s in $("$weir" info --db "$db" --json | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)["schemas"])))'); do
  q1="${q1:+$q1,}$s=$("$weir" count --db "$db" "#type == \"$s\"")"
done
declare -A want=(
  [q1]="$q1"
  [q2]="$("$weir" count --db "$db" 'orig_bytes > 1000')"
  [q3]="$("$weir" count --db "$db" "uid == \"$uid\"")"
)
echo
echo "queries: q1 rows per schema; q2 orig_bytes > 1000; q3 uid == \"$uid\""
printf '%-12s %-6s %-28s %-28s %9s\n' engine query answer "weir count" seconds
printf '%-12s %-6s %-28s %-28s %9s\n' weir q1 "${want[q1]}" "${want[q1]}" -
bad=0
for engine in duckdb datafusion spark; do
  while read -r e q a t; do
    if [ "$q" = setup ]; then
      printf '%-12s %-6s %-28s %-28s %9s\n' "$e" setup - - "$t"
      continue
    fi
    mark=""
    if [ "$a" != "${want[$q]}" ]; then mark="  DISAGREES"; bad=1; fi
    printf '%-12s %-6s %-28s %-28s %9s%s\n' "$e" "$q" "$a" "${want[$q]}" "$t" "$mark"
  done < <(python3 "$root/bench/lake_queries.py" "$engine" "$lake" "$uid" 2>"$work/lake-$engine.err" || { echo "$engine failed:"; tail -5 "$work/lake-$engine.err"; bad=1; })
done
exit $bad

#!/usr/bin/env bash
# Query benchmark, side by side (issue 34): weir against DuckDB (a native table and a zstd Parquet
# file) and ClickHouse (chdb, a MergeTree table), on the same events, with the same answers.
#
#   bench/query.sh            REPS=5 runs per query and engine (alternating); medians
#   REPS=9 bench/query.sh     more runs
#   EVENTS=2000000 bench/query.sh   a smaller generated archive (default 10,000,000)
#   SKIP_W1000=1              leaves out the W1000 dataset
#   SKIP_G=1                  leaves out the generated dataset
#   BASELINE=/tmp/weir-old bench/query.sh   also runs every weir query with that binary (built
#                             from an earlier commit; it imports its own archives, DB-base),
#                             interleaved, and prints the ratios new / baseline
#   ENGINES=weir,weir-res,duck-warm,duck-fresh   a subset of the engines below
#
# It installs DuckDB's and chdb's Python packages itself (bench/setup.sh, pip), builds release
# weir and the generator (honouring CARGO_TARGET_DIR), and makes, once (work files in
# $BENCH_DIR, default /tmp/weir-bench, kept between runs), for each dataset:
#   - G: EVENTS generated conn events with unique uids and one rare address every 1M events
#     (`generate --unique-uids --rare-addr 240.0.0.1`); W1000: bench/compare.sh's workload
#     (w1000.log, made by it if missing);
#   - a weir archive (`weir import`); a zstd Parquet file (DuckDB's read_csv of the TSV with
#     explicit column types from #fields/#types, `#` lines skipped with comment='#'; times and
#     intervals as DOUBLE epoch seconds); a DuckDB database file with a table copied from the
#     Parquet file; a chdb session directory with a MergeTree table (ORDER BY ts) filled from
#     the Parquet file (ClickHouse's TSV reader cannot skip `#` lines).
# Queries (bench/query_engines.py lists them with their SQL): count, orig_bytes > 1k, a uid's
# count and export (G: the middle event's unique uid; W1000: the first event's uid, in every
# copy), the rare address in any address field, a 1-hour time range, a substring and a regex on
# history, top id.resp_p 10, events per hour, sort ts desc | head 10, the 10 biggest senders;
# and issue 57's: the rare address as id.orig_h and as the concept net.src.ip, the uid's flow
# by net.community_id (SQL: its 5-tuple either way), and a Sigma rule (bench/rules/, a CIDR on
# either address; the API gets it as "sigma").
# Timed, in turn within each repetition:
#   weir      a fresh process: `weir count --db DB EXPR`, or `weir export --to json` for rows
#             and aggregates (wall time, process start included)
#   weir res  weir resident: one `weir serve --db DB` per dataset, queried through its API
#             (/api/v1/count, /api/v1/query as NDJSON) on one kept-alive HTTP connection; each
#             query run once, untimed, before
#   base, base res   the same two with BASELINE's binary and archive
#   duck warm DuckDB on the native table, in process, one connection per dataset that ran the
#             query once, untimed, before (the table queried before, as in a user's session)
#   duck in   DuckDB on the native table, in a Python process already running, a fresh
#             connection per query (query and fetch timed, not the connect)
#   duck new  the same in a new `python3 -c` process (wall time: start, import, connect, query)
#   pq in     DuckDB on the Parquet file (read_parquet), in process
#   chdb in   chdb on the MergeTree table, in process (its ~0.5 s connect not timed)
#   chdb new  the same in a new `python3 -c` process (both chdb columns are left out, with a
#             note, when chdb cannot be installed)
# Every engine's answer must agree (counts as integers; rows, pairs and times normalized,
# timestamps as epoch microseconds, ties at a top-N cut by value only); a disagreement is
# printed and the script exits 1. Prints the machine (cores, load) and versions; what a fresh
# process of `true` and of `weir --version` takes, timed as weir's queries are (the floor under
# weir's column); then per query and dataset: the answer (count, or number of rows), the six
# medians of wall time and weir / duck in (below 1: weir is faster).
set -euo pipefail
REPS=${REPS:-5}
EVENTS=${EVENTS:-10000000}
. "$(dirname "$0")/env.sh"

bash "$root/bench/setup.sh"
if [[ ",${ENGINES:-chdb}," == *,chdb* ]] && ! python3 -c 'import chdb' 2>/dev/null; then
  echo "bench/query.sh: installing chdb (pip)" >&2
  python3 -m pip install -q chdb >/dev/null 2>&1 || true
fi
python3 -c "import duckdb" 2>/dev/null || { echo "bench/query.sh: duckdb is needed (pip install duckdb)" >&2; exit 1; }
bench_build --example generate
gen="$target/release/examples/generate"
engines="$root/bench/query_engines.py"
base=${BASELINE:-}
[ -z "$base" ] || export WEIR_BASE="$base"
# import LOG DB: DB made by weir (and DB-base by the baseline's weir), once.
import_once() {
  local bin db
  for bin in "$weir" ${base:+"$base"}; do
    db=$2
    [ "$bin" = "$weir" ] || db=$2-base
    if [ ! -d "$db" ]; then
      echo "importing $1 into $db" >&2
      "$bin" import --quiet --db "$db.tmp" "$1"
      mv "$db.tmp" "$db"
    fi
  done
}

datasets=()
if [ -z "${SKIP_G:-}" ]; then
  # The generated archive: EVENTS conn events, unique uids, a rare address every 1M events.
  glog="$work/g$EVENTS.log"
  gdb="$work/g$EVENTS.db"
  if [ ! -s "$glog" ]; then
    echo "generating $EVENTS events" >&2
    "$gen" --events "$EVENTS" --log conn --seed 7 --unique-uids --rare-addr 240.0.0.1 \
      --rare-every 1000000 > "$glog.tmp"
    mv "$glog.tmp" "$glog"
  fi
  import_once "$glog" "$gdb"
  python3 "$engines" load "$glog" "$work/g$EVENTS.parquet" "$work/g$EVENTS.duckdb" "$work/g$EVENTS.chdb"
  # The needle: the uid of the event in the middle; the time range: the hour it falls in.
  read -r needle mid_ts < <(awk -F'\t' -v n=$((EVENTS / 2)) '!/^#/ && ++i == n { print $2, int($1); exit }' "$glog")
  t0=$((mid_ts / 3600 * 3600))
  datasets+=("G|$glog|$gdb|$work/g$EVENTS.parquet|$work/g$EVENTS.duckdb|$work/g$EVENTS.chdb|$needle|$t0|$((t0 + 3600))|$gdb-base")
fi

if [ -z "${SKIP_W1000:-}" ]; then
  wlog="$work/w1000.log"
  if [ ! -s "$wlog" ]; then
    echo "bench/query.sh: $wlog missing: running bench/compare.sh once to make it" >&2
    SKIP_DUCKDB=1 REPS=1 bash "$root/bench/compare.sh" 1000 >/dev/null
  fi
  wdb="$work/w1000-query.db"
  import_once "$wlog" "$wdb"
  python3 "$engines" load "$wlog" "$work/w1000.parquet" "$work/w1000.duckdb" "$work/w1000.chdb"
  # W1000 repeats one day of conn.log 1000 times: its first uid is in every copy, and
  # 2009-11-18 10:00 to 11:00 overlaps every copy.
  wuid=$(awk -F'\t' '!/^#/ { print $2; exit }' "$wlog")
  datasets+=("W1000|$wlog|$wdb|$work/w1000.parquet|$work/w1000.duckdb|$work/w1000.chdb|$wuid|1258538400|1258542000|$wdb-base")
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$("$weir" --version); DuckDB $(python3 -c 'import duckdb; print(duckdb.__version__)');" \
  "chdb $(python3 -c 'import chdb; print(chdb.__version__, "(ClickHouse", chdb.query("SELECT version()", "CSV").data().strip().strip("\"") + ")")' 2>/dev/null || echo missing);" \
  "Python $(python3 -c 'import platform; print(platform.python_version())'); $REPS runs each, alternating; medians of wall time"
python3 "$engines" run "$weir" "$REPS" "${datasets[@]}"

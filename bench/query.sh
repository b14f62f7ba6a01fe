#!/usr/bin/env bash
# Query benchmark: `weir count EXPR` against DuckDB over a zstd Parquet copy of the same events.
#
#   bench/query.sh            REPS=5 runs per query (alternating weir and DuckDB); medians
#   REPS=9 bench/query.sh     more runs
#   EVENTS=2000000 bench/query.sh   a smaller generated archive (default 10,000,000)
#   SKIP_W1000=1              leaves out the W1000 queries
#
# It installs DuckDB's Python package itself (bench/setup.sh), builds release weir and the
# generator, and makes, once (work files in $BENCH_DIR, default /tmp/weir-bench, kept between
# runs):
#   - G: EVENTS generated conn events with unique uids and one rare address
#     (`generate --unique-uids --rare-addr 240.0.0.1`), imported into a weir archive, and the
#     same text read by DuckDB's read_csv into a zstd Parquet file;
#   - W1000: bench/compare.sh's workload (w1000.log, made by it if missing), likewise.
# Each query runs as one `weir count` process (wall time, process start included) and as one
# DuckDB `SELECT count(*)` in a fresh connection of a Python process that is already running
# (query time only: DuckDB's import is not counted). Both answers must agree. Prints, per
# query: both medians of wall time, DuckDB/weir (above 1: weir is faster), the archive's
# events per second of weir's wall time, the medians of CPU time (user + system, all
# threads: steadier than wall time when the machine is shared), and the target from issue 10.
set -euo pipefail
REPS=${REPS:-5}
EVENTS=${EVENTS:-10000000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-/tmp/weir-bench}
mkdir -p "$work"

bash "$root/bench/setup.sh"
python3 -c 'import duckdb' 2>/dev/null || { echo "bench/query.sh: DuckDB is needed (pip install duckdb)" >&2; exit 1; }
(cd "$root" && cargo build --release --quiet --bin weir --example generate)
weir="$root/target/release/weir"
gen="$root/target/release/examples/generate"

# to_parquet LOG PARQUET: the Zeek TSV log's events, columns named by its #fields line.
to_parquet() {
  local names
  names=$(grep -m1 '^#fields' "$1" | cut -f2- | sed "s/\t/','/g")
  python3 - "$1" "$2.tmp" "$names" <<'EOF'
import sys, duckdb
log, out, names = sys.argv[1], sys.argv[2], sys.argv[3]
duckdb.sql(f"""COPY (SELECT * FROM read_csv('{log}', delim='\t', comment='#', nullstr='-',
  header=false, names=['{names}'], sample_size=100000)) TO '{out}' (FORMAT parquet, COMPRESSION zstd)""")
EOF
  mv "$2.tmp" "$2"
}

# The generated archive: EVENTS conn events, unique uids, a rare address every 1M events.
glog="$work/g$EVENTS.log"
gdb="$work/g$EVENTS.db"
gpq="$work/g$EVENTS.parquet"
if [ ! -s "$glog" ]; then
  echo "generating $EVENTS events" >&2
  "$gen" --events "$EVENTS" --log conn --seed 7 --unique-uids --rare-addr 240.0.0.1 \
    --rare-every 1000000 > "$glog.tmp"
  mv "$glog.tmp" "$glog"
fi
if [ ! -d "$gdb" ]; then
  echo "importing $glog" >&2
  "$weir" import --quiet --db "$gdb.tmp" "$glog"
  mv "$gdb.tmp" "$gdb"
fi
[ -s "$gpq" ] || { echo "writing $gpq" >&2; to_parquet "$glog" "$gpq"; }
# The needle: the uid of the event in the middle.
needle=$(awk -F'\t' -v n=$((EVENTS / 2)) '!/^#/ && ++i == n { print $2; exit }' "$glog")
first_ts=$(awk -F'\t' '!/^#/ { print int($1); exit }' "$glog")
t0=$((first_ts + 100000)); t1=$((t0 + 10000))

queries=(
  "G needle uid|$gdb|$gpq|uid == \"$needle\"|uid = '$needle'|<= 50 ms, < DuckDB"
  "G needle address|$gdb|$gpq|240.0.0.1|\"id.orig_h\" = '240.0.0.1' OR \"id.resp_h\" = '240.0.0.1'|<= 50 ms, < DuckDB"
  "G broad|$gdb|$gpq|#type == \"zeek.conn\" && orig_bytes > 1k|orig_bytes > 1000|"
  "G metadata #type|$gdb|$gpq|#type == \"zeek.conn\"|true|"
  "G time range 10000 s|$gdb|$gpq|#timestamp >= @$t0 && #timestamp < @$t1|ts >= $t0 AND ts < $t1|"
)

if [ -z "${SKIP_W1000:-}" ]; then
  wlog="$work/w1000.log"
  if [ ! -s "$wlog" ]; then
    echo "bench/query.sh: $wlog missing: running bench/compare.sh once to make it" >&2
    SKIP_DUCKDB=1 REPS=1 bash "$root/bench/compare.sh" 1000 >/dev/null
  fi
  wdb="$work/w1000-query.db"
  wpq="$work/w1000.parquet"
  if [ ! -d "$wdb" ]; then
    echo "importing $wlog" >&2
    "$weir" import --quiet --db "$wdb.tmp" "$wlog"
    mv "$wdb.tmp" "$wdb"
  fi
  [ -s "$wpq" ] || { echo "writing $wpq" >&2; to_parquet "$wlog" "$wpq"; }
  # W1000 repeats one day of conn.log 1000 times: a time range overlaps every copy.
  queries+=(
    "W1000 broad|$wdb|$wpq|#type == \"zeek.conn\" && orig_bytes > 1k|orig_bytes > 1000|>= 25 M events/s"
    "W1000 metadata #type|$wdb|$wpq|#type == \"zeek.conn\"|true|< 20 ms"
    "W1000 time range 1 h|$wdb|$wpq|#timestamp >= 2009-11-18T10:00:00Z && #timestamp < 2009-11-18T11:00:00Z|ts >= 1258538400 AND ts < 1258542000|< 20 ms"
  )
fi

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "weir: $weir; DuckDB $(python3 -c 'import duckdb; print(duckdb.__version__)'); $REPS runs each, alternating"
printf '%s\n' "${queries[@]}" > "$work/queries.txt"
python3 - "$weir" "$REPS" "$work/queries.txt" <<'EOF'
import resource, statistics, subprocess, sys, time
import duckdb

weir, reps = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3]) as f:
    rows = [line.rstrip("\n").split("|") for line in f if line.strip()]

def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run_weir(db, expr):
    c, t = child_cpu(), time.perf_counter()
    out = subprocess.run([weir, "count", "--db", db, expr], capture_output=True, text=True)
    dt, cpu = time.perf_counter() - t, child_cpu() - c
    if out.returncode != 0:
        sys.exit(f"weir count failed: {expr}: {out.stderr}")
    return dt, cpu, int(out.stdout)

def run_duckdb(pq, where):
    con = duckdb.connect()
    c, t = time.process_time(), time.perf_counter()
    n = con.execute(f"SELECT count(*) FROM read_parquet('{pq}') WHERE {where}").fetchall()[0][0]
    dt, cpu = time.perf_counter() - t, time.process_time() - c
    con.close()
    return dt, cpu, n

def events(db):
    out = subprocess.run([weir, "count", "--db", db], capture_output=True, text=True)
    return int(out.stdout)

print(f"{'query':<24} {'matches':>10} {'weir':>9} {'DuckDB':>9} {'DuckDB/weir':>11} {'weir scan':>14}"
      f" {'CPU: weir':>10} {'DuckDB':>8}  target")
failed = False
for name, db, pq, expr, where, target in rows:
    w, d, wc, dc, answers = [], [], [], [], set()
    for i in range(reps):
        pair = [("w", lambda: run_weir(db, expr)), ("d", lambda: run_duckdb(pq, where))]
        for who, f in pair if i % 2 == 0 else reversed(pair):
            dt, cpu, n = f()
            (w if who == "w" else d).append(dt)
            (wc if who == "w" else dc).append(cpu)
            answers.add((who, n))
    counts = {n for _, n in answers}
    if len(counts) != 1:
        print(f"{name}: answers differ: {sorted(answers)}")
        failed = True
        continue
    mw, md = statistics.median(w), statistics.median(d)
    rate = events(db) / mw / 1e6
    cw, cd = statistics.median(wc), statistics.median(dc)
    print(f"{name:<24} {counts.pop():>10} {mw*1000:>7.1f}ms {md*1000:>7.1f}ms {md/mw:>10.2f}x {rate:>8.1f} M ev/s"
          f" {cw*1000:>8.0f}ms {cd*1000:>6.0f}ms  {target}")
    print(f"  weir:   {expr}")
sys.exit(1 if failed else 0)
EOF

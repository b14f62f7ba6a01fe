#!/usr/bin/env bash
# Retro matching benchmark (issue 58): `weir intel match` of N random IPv4 addresses over
# EVENTS generated conn events, beside a full scan of the same archive and DuckDB in process
# on a warm connection doing the same as a join.
#
#   bench/retro.sh                 N=100000 addresses, EVENTS=10000000, REPS=5 (medians)
#   N=1 bench/retro.sh             one indicator (the issue's needle case)
#   BASELINE=/tmp/weir-old bench/retro.sh   also times that binary (built from an earlier
#                                  commit) on the same archive, interleaved
#
# Work files go to $BENCH_DIR (default /tmp/weir-bench) and are kept: the generated log
# (`generate --events EVENTS --log conn`), its archive, the addresses (Python's random with
# seed 7; one of them, 240.0.0.1, is no generated address) and a DuckDB file with the two
# address columns as text. The set is stored in the archive directory as set `retro-N`.
# Timed: `weir intel match --no-store` (a fresh process, wall time), `weir count` of a regex
# on uid (a full scan of one column), and DuckDB's `count(*)` of the join on `id.orig_h`
# UNION ALL the join on `id.resp_h` against a temporary table of the addresses, run once
# untimed, then REPS times. The two engines must give the same number of matches.
set -euo pipefail
N=${N:-100000}
EVENTS=${EVENTS:-10000000}
REPS=${REPS:-5}
. "$(dirname "$0")/env.sh"

bash "$root/bench/setup.sh"
bench_build --example generate

log="$work/retro-g$EVENTS.log"
[ -s "$log" ] || "$target/release/examples/generate" --events "$EVENTS" --log conn > "$log"
db="$work/retro-g$EVENTS.db"
[ -d "$db" ] || "$weir" import --quiet --db "$db" "$log"
addrs="$work/retro-addrs-$N.txt"
if [ ! -s "$addrs" ]; then
  python3 - "$N" > "$addrs" <<'EOF'
import random, sys
n = int(sys.argv[1])
random.seed(7)
s = {"240.0.0.1"}
while len(s) < n:
    s.add(f"{random.randint(1, 223)}.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}")
print("\n".join(sorted(s)))
EOF
fi
set_name="retro-$N"
"$weir" intel remove --db "$db" --set "$set_name" >/dev/null 2>&1 || true
"$weir" intel add --db "$db" --set "$set_name" --type addr "$addrs" >/dev/null 2>&1

# wall BIN ARGS...: prints the wall seconds of one run (stdout discarded).
wall() {
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f\n", m}'; }

matches=$("$weir" intel match --no-store --db "$db" "$set_name" 2>/dev/null | wc -l)
declare -a T_NEW T_BASE T_SCAN
for _ in $(seq "$REPS"); do
  T_NEW+=("$(wall "$weir" intel match --no-store --db "$db" "$set_name")")
  if [ -n "${BASELINE:-}" ]; then
    T_BASE+=("$(wall "$BASELINE" intel match --no-store --db "$db" "$set_name")")
  fi
  T_SCAN+=("$(wall "$weir" count --db "$db" 'uid ~ /.*Qx.*/')")
done

duck=$(python3 - "$log" "$work/retro-g$EVENTS.duckdb" "$addrs" "$REPS" <<'EOF'
import duckdb, statistics, sys, time
log, path, addrs, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
con = duckdb.connect(path)
if "conn" not in [r[0] for r in con.execute("SHOW TABLES").fetchall()]:
    con.execute(f"""CREATE TABLE conn AS SELECT column02 AS orig_h, column04 AS resp_h
        FROM read_csv('{log}', delim='\t', header=false, comment='#', all_varchar=true)""")
con.execute(f"""CREATE OR REPLACE TEMP TABLE ind AS
    SELECT * FROM read_csv('{addrs}', header=false, columns={{'v': 'VARCHAR'}})""")
q = """SELECT count(*) FROM (SELECT 1 FROM conn JOIN ind ON orig_h = v
       UNION ALL SELECT 1 FROM conn JOIN ind ON resp_h = v)"""
answer = con.execute(q).fetchone()[0]
ts = []
for _ in range(reps):
    t0 = time.perf_counter()
    con.execute(q).fetchone()
    ts.append(time.perf_counter() - t0)
print(answer, f"{statistics.median(ts):.3f}")
EOF
)
duck_answer=${duck% *}
duck_med=${duck#* }

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)')"
echo "$EVENTS events, $N addresses: weir $matches matches, DuckDB $duck_answer"
new=$(printf '%s\n' "${T_NEW[@]}" | median)
scan=$(printf '%s\n' "${T_SCAN[@]}" | median)
printf '%-46s %8s s\n' "weir intel match --no-store" "$new"
if [ -n "${BASELINE:-}" ]; then
  base=$(printf '%s\n' "${T_BASE[@]}" | median)
  printf '%-46s %8s s  (new/base %.2f)\n' "baseline intel match --no-store" "$base" "$(echo "$new / $base" | bc -l)"
fi
printf '%-46s %8s s  (match/scan %.2f; target <= 2)\n' "weir count 'uid ~ /.*Qx.*/' (full scan)" "$scan" "$(echo "$new / $scan" | bc -l)"
printf '%-46s %8s s  (weir/duck %.2f; target < 1)\n' "DuckDB warm join" "$duck_med" "$(echo "$new / $duck_med" | bc -l)"
if [ "$matches" != "$duck_answer" ]; then
  echo "answers differ: weir $matches, DuckDB $duck_answer" >&2
  exit 1
fi

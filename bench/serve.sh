#!/usr/bin/env bash
# `weir serve`: query latency through the HTTP API against the CLI, and the ingest rate of a
# followed pipeline while clients query against without them.
#
#   bench/serve.sh                 EVENTS=3000000 archived events, REPS=5, CLIENTS=4
#   WEIR=target/release/weir EVENTS=1000000 REPS=3 bench/serve.sh
#
# Work files in $BENCH_DIR (default /tmp/weir-bench-serve), the archive kept between runs.
#
# 1. Latency: an archive of EVENTS generated conn events (unique uids) is served by
#    `weir serve` (no pipeline); each query runs REPS times through the API (curl, a new
#    connection each, the whole answer read) and as one CLI process (`weir count` or
#    `weir export --to json`, process start included), alternating; medians of wall time.
#    The queries: `count` of everything, a needle (one uid), `top id.resp_p`.
# 2. Ingest: INGEST generated events (default 2,000,000) written at once into a followed
#    directory, `weir serve` with a pipeline that follows it into a new archive; the time
#    from start until the archive sink has written them all, without clients and with
#    CLIENTS clients that each query in a loop (the count, a needle, `top id.resp_p`, in
#    turn) on the archive being filled. Reports events/s of both, their ratio, and the
#    queries answered 200 during the run with clients.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
EVENTS=${EVENTS:-3000000}
INGEST=${INGEST:-2000000}
REPS=${REPS:-5}
CLIENTS=${CLIENTS:-4}
work=${BENCH_DIR:-/tmp/weir-bench-serve}
mkdir -p "$work"
cd "$root"
if [ -z "${WEIR:-}" ]; then
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=8 \
    cargo build --quiet --release --bin weir --example generate
  WEIR=${CARGO_TARGET_DIR:-$root/target}/release/weir
fi
gen=${CARGO_TARGET_DIR:-$root/target}/release/examples/generate
[ -x "$gen" ] || cargo build --quiet --release --example generate
median() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
now() { date +%s.%N; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# Starts `weir serve --db DB ARGS...`; sets $addr and $srv (its pid).
start_server() {
  local db=$1; shift
  "$WEIR" serve --db "$db" --listen 127.0.0.1:0 "$@" 2>"$work/serve.err" &
  srv=$!
  pids+=("$srv")
  addr=
  for _ in $(seq 600); do
    addr=$(sed -n 's|^weir: serving http://\(.*\)/$|\1|p' "$work/serve.err" | head -1)
    [ -n "$addr" ] && return
    sleep 0.05
  done
  echo "weir serve did not start:" >&2; cat "$work/serve.err" >&2; exit 1
}
stop_server() { kill -TERM "$srv"; wait "$srv" || true; }
api() { curl -sS --fail-with-body -o "$work/api.out" -w '%{time_total}\n' -H 'Content-Type: application/json' -d "$2" "http://$addr$1"; }

# ---- 1. latency ----
db=$work/db
if ! "$WEIR" count --db "$db" >/dev/null 2>&1; then
  rm -rf "$db"
  "$gen" --events "$EVENTS" --log conn --unique-uids | "$WEIR" import --quiet --db "$db"
fi
n=$("$WEIR" count --db "$db")
uid=$("$WEIR" export --db "$db" --to json "#id == $((n / 2))" | jq -r .uid)
echo "archive: $n events; needle uid $uid"
start_server "$db"
printf '%-18s %10s %10s %8s\n' query api_s cli_s cli/api
run_case() {
  local name=$1 path=$2 body=$3; shift 3
  : >"$work/t.api"; : >"$work/t.cli"
  for _ in $(seq "$REPS"); do
    api "$path" "$body" >>"$work/t.api"
    local t0; t0=$(now)
    "$@" >"$work/cli.out"
    echo "$(now) - $t0" | bc -l >>"$work/t.cli"
  done
  local a c; a=$(median <"$work/t.api"); c=$(median <"$work/t.cli")
  printf '%-18s %10.3f %10.3f %8.2f\n' "$name" "$a" "$c" "$(echo "$c / $a" | bc -l)"
}
run_case count /api/v1/count '{"query": ""}' "$WEIR" count --db "$db"
run_case "needle uid" /api/v1/query "{\"query\": \"uid == \\\"$uid\\\"\"}" \
  "$WEIR" export --db "$db" --to json "uid == \"$uid\""
run_case "top id.resp_p" /api/v1/query '{"query": "top id.resp_p"}' \
  "$WEIR" export --db "$db" --to json "top id.resp_p"
stop_server

# ---- 2. ingest while clients query ----
"$gen" --events "$INGEST" --log conn --unique-uids --seed 7 >"$work/ingest.log"
ingest() {
  local clients=$1
  rm -rf "$work/logs" "$work/db2"; mkdir -p "$work/logs"
  cat >"$work/live.toml" <<EOF
[sources.zeek]
type = "file"
paths = ["$work/logs/*.log"]
follow = true

[transforms.batch]
type = "batch"
inputs = ["zeek"]
timeout = "1s"

[sinks.archive]
type = "archive"
inputs = ["batch"]
db = "$work/db2"
EOF
  cp "$work/ingest.log" "$work/logs/conn.log"
  local t0; t0=$(now)
  start_server "$work/db2" "$work/live.toml"
  local cpids=()
  for c in $(seq "$clients"); do
    (
      i=0 q=0
      while :; do
        case $((i % 3)) in
          0) body='{"query": ""}'; path=/api/v1/count ;;
          1) body="{\"query\": \"uid == \\\"$uid\\\"\"}"; path=/api/v1/query ;;
          2) body='{"query": "top id.resp_p"}'; path=/api/v1/query ;;
        esac
        curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$body" "http://$addr$path" && q=$((q + 1))
        i=$((i + 1))
        echo "$q" >"$work/client.$c"
      done
    ) &
    cpids+=($!)
    pids+=($!)
  done
  local done_at=
  for _ in $(seq 36000); do
    if curl -s "http://$addr/metrics" | grep -q "weir_stage_events_total{stage=\"archive\",kind=\"sink\"} $INGEST\$"; then
      done_at=$(now); break
    fi
    sleep 0.05
  done
  for p in "${cpids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  stop_server
  [ -n "$done_at" ] || { echo "ingest did not finish" >&2; exit 1; }
  local secs; secs=$(echo "$done_at - $t0" | bc -l)
  local queries=0
  for c in $(seq "$clients"); do queries=$((queries + $(cat "$work/client.$c" 2>/dev/null || echo 0))); rm -f "$work/client.$c"; done
  echo "$secs $queries"
}
: >"$work/t.0"; : >"$work/t.n"
for _ in $(seq "$REPS"); do
  ingest 0 | awk '{print $1}' >>"$work/t.0"
  ingest "$CLIENTS" >>"$work/t.n"
done
s0=$(median <"$work/t.0")
sn=$(awk '{print $1}' "$work/t.n" | median)
qn=$(awk '{print $2}' "$work/t.n" | median)
printf 'ingest of %d events: %.2f s (%.0f events/s) alone; %.2f s (%.0f events/s) with %d clients querying (%s queries answered, median); ratio %.2f\n' \
  "$INGEST" "$s0" "$(echo "$INGEST / $s0" | bc -l)" "$sn" "$(echo "$INGEST / $sn" | bc -l)" "$CLIENTS" "$qn" "$(echo "$s0 / $sn" | bc -l)"

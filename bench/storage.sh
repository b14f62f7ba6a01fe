#!/usr/bin/env bash
# Storage benchmark (issue 11): archive size against the gzip'd logs it replaces, and what each
# codec and level costs at import, all in one run.
#
#   bench/storage.sh              sizes of each corpus log imported alone, per codec; then W1000
#                                 import (wall, CPU, archive bytes) per codec/level against
#                                 `pigz -dc`, alternating, medians of REPS runs; then `weir export`
#                                 and the broad query of bench/query.sh, compressed against none
#   REPS=5 bench/storage.sh       repetitions per case (default 3)
#   GEN=1 bench/storage.sh        also the 10 M generated events (examples/generate.rs
#                                 --unique-uids) against `gzip -6` of the same log (needs ~4 GB
#                                 of free disk in $BENCH_DIR)
#   CASES="default|..." to pick W1000 cases (names as printed)
#
# Work files go to $BENCH_DIR (default /tmp/weir-bench; the W1000 workload is bench/compare.sh's,
# built there if missing). The corpus is $WEIR_CORPUS (default ../shared/data/zeek).
set -euo pipefail
REPS=${REPS:-3}
. "$(dirname "$0")/env.sh"
bash "$root/bench/setup.sh"
bench_build --example generate
db="$work/storage-db"
trap 'rm -rf "$db" "$db.none"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
# timed CMD...: runs it with stdout to /dev/null; sets W (wall s) and C (user + system s).
timed() {
  sync
  /usr/bin/time -f '%e %U %S' -o "$work/storage.time" "$@" >/dev/null
  read -r W u s < "$work/storage.time"
  C=$(echo "$u + $s" | bc -l)
}
# segbytes DB: bytes of its segment files.
segbytes() { find "$1/segments" -name '*.seg' -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

echo "== each corpus log imported alone: segment bytes (ratio to the .log.gz)"
codecs=("default:" "zstd 3:--compression-level 3" "zstd 9:--compression-level 9" "lz4:--compression lz4" "none:--compression none --no-sketches")
printf '%-10s %12s' log ".log.gz"
for c in "${codecs[@]}"; do printf ' %20s' "${c%%:*}"; done
echo
for log in conn dns http; do
  gz="$corpus/$log.log.gz"
  [ -f "$gz" ] || { echo "note: $gz missing, skipped"; continue; }
  gzb=$(stat -c %s "$gz")
  printf '%-10s %12s' "$log" "$gzb"
  for c in "${codecs[@]}"; do
    rm -rf "$db"
    # shellcheck disable=SC2086
    "$weir" import -q --db "$db" ${c#*:} "$gz"
    b=$(segbytes "$db")
    printf ' %12s (%5.3f)' "$b" "$(echo "$b / $gzb" | bc -l)"
  done
  echo
done

gz="$work/w1000.log.gz"
if [ ! -s "$gz" ]; then
  bash "$root/bench/compare.sh" 1000 >/dev/null 2>&1 || true
fi
if [ -s "$gz" ]; then
  echo
  echo "== W1000 import ($gz), $REPS alternating runs, medians; ratio = wall / pigz -dc wall"
  cases=("pigz -dc:" "default:" "zstd 1, no sketches:--no-sketches" "zstd 3:--compression-level 3"
    "zstd -1:--compression-level -1" "lz4:--compression lz4" "none, no sketches:--compression none --no-sketches")
  declare -A WS CS BYTES
  for _ in $(seq "$REPS"); do
    for c in "${cases[@]}"; do
      name=${c%%:*}
      [ -n "${CASES:-}" ] && [[ "$name" != pigz* ]] && ! [[ "|$CASES|" == *"|$name|"* ]] && continue
      if [ "$name" = "pigz -dc" ]; then
        timed pigz -dc "$gz"
      else
        rm -rf "$db"
        # shellcheck disable=SC2086
        timed "$weir" import -q --db "$db" ${c#*:} "$gz"
        BYTES[$name]=$(segbytes "$db")
      fi
      WS[$name]="${WS[$name]:-} $W"
      CS[$name]="${CS[$name]:-} $C"
    done
  done
  pigz=$(median ${WS["pigz -dc"]})
  printf '%-22s %8s %8s %8s %14s %8s\n' case wall CPU ratio "archive bytes" "vs .gz"
  gzb=$(stat -c %s "$gz")
  for c in "${cases[@]}"; do
    name=${c%%:*}
    [ -n "${WS[$name]:-}" ] || continue
    w=$(median ${WS[$name]}); cpu=$(median ${CS[$name]})
    b=${BYTES[$name]:-}
    printf '%-22s %7.2fs %7.2fs %8.2f %14s %8s\n' "$name" "$w" "$cpu" "$(echo "$w / $pigz" | bc -l)" \
      "${b:--}" "$([ -n "$b" ] && printf '%.3f' "$(echo "$b / $gzb" | bc -l)" || echo -)"
  done

  echo
  echo "== W1000 reads: default (compressed) archive against --compression none, medians"
  rm -rf "$db" "$db.none"
  "$weir" import -q --db "$db" "$gz"
  "$weir" import -q --db "$db.none" --compression none --no-sketches "$gz"
  broad='#type == "zeek.conn" && orig_bytes > 1k'
  declare -A RW
  for _ in $(seq "$REPS"); do
    for d in "$db" "$db.none"; do
      timed "$weir" export --db "$d" --to zeek-tsv; RW["export $d"]="${RW["export $d"]:-} $W"
      timed "$weir" count --db "$d" "$broad"; RW["broad $d"]="${RW["broad $d"]:-} $W"
    done
  done
  events=$(grep -c . <(zcat "$gz" | grep -v '^#') || true)
  for what in export broad; do
    a=$(median ${RW["$what $db"]}); b=$(median ${RW["$what $db.none"]})
    printf '%-8s compressed %6.2fs  none %6.2fs  (%+.0f%%)  compressed: %.1f M events/s\n' \
      "$what" "$a" "$b" "$(echo "($a / $b - 1) * 100" | bc -l)" "$(echo "$events / $a / 1000000" | bc -l)"
  done
fi

if [ "${GEN:-0}" = 1 ]; then
  echo
  echo "== 10,000,000 generated events (unique uids): archive against gzip -6"
  log="$work/g10000000.log"
  [ -s "$log" ] || "$target/release/examples/generate" --events 10000000 --log conn --unique-uids > "$log"
  g6=$( (command -v pigz >/dev/null && pigz -6 -c "$log" || gzip -6 -c "$log") | wc -c)
  rm -rf "$db"
  timed "$weir" import -q --db "$db" "$log"
  b=$(segbytes "$db")
  printf 'gzip -6: %s bytes; archive: %s bytes (%.3f), import %.2fs wall, %.2fs CPU\n' "$g6" "$b" \
    "$(echo "$b / $g6" | bc -l)" "$W" "$C"
fi

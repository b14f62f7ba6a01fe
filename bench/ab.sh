#!/usr/bin/env bash
# A/B of two weir builds on the W1000 workload of bench/compare.sh, for a noisy machine: the
# two binaries alternate run by run, and each case reports the median CPU time (user + sys,
# steadier than wall time when other work shares the cores) and wall time, and their ratio.
#
#   bench/ab.sh OLD_WEIR NEW_WEIR [REPS]     (REPS default 5; run bench/compare.sh once first)
set -euo pipefail
old=$1 new=$2 reps=${3:-5}
. "$(dirname "$0")/env.sh"
[ -s "$work/w1000.log" ] || { echo "run bench/compare.sh first (it builds the workload)"; exit 1; }
median() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
for case in "text file|$work/w1000.log" "gzip file|$work/w1000.log.gz" "1-member gzip, stdin|<$work/w1000.single.log.gz"; do
  name=${case%%|*} arg=${case#*|}
  : >"$work/ab.old"; : >"$work/ab.new"
  for _ in $(seq "$reps"); do
    for side in old new; do
      bin=$old; [ $side = new ] && bin=$new
      rm -rf "$work/dbab"; sync
      if [[ $arg == "<"* ]]; then
        /usr/bin/time -f '%U %S %e' -o "$work/ab.t" "$bin" import --quiet --db "$work/dbab" <"${arg#<}" 2>/dev/null
      else
        /usr/bin/time -f '%U %S %e' -o "$work/ab.t" "$bin" import --quiet --db "$work/dbab" "$arg" 2>/dev/null
      fi
      tail -1 "$work/ab.t" >>"$work/ab.$side"
    done
  done
  for side in old new; do
    cpu[$([ $side = old ] && echo 0 || echo 1)]=$(awk '{print $1 + $2}' "$work/ab.$side" | median)
    wall[$([ $side = old ] && echo 0 || echo 1)]=$(awk '{print $3}' "$work/ab.$side" | median)
  done
  printf '%-22s cpu %6.2f -> %6.2f s (%.3f)   wall %6.2f -> %6.2f s (%.3f)\n' "$name" \
    "${cpu[0]}" "${cpu[1]}" "$(echo "${cpu[1]} / ${cpu[0]}" | bc -l)" \
    "${wall[0]}" "${wall[1]}" "$(echo "${wall[1]} / ${wall[0]}" | bc -l)"
done

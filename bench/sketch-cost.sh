#!/usr/bin/env bash
# What the per-batch sketches cost a W1000 import (the search issue allows 10%), measured in
# pairs for a noisy machine: each round imports with the default settings and with
# `--no-sketches` back to back (the order alternating by round), and the medians of the
# per-round differences are reported, per binary, and the ratio of each mode's fastest run.
#
#   bench/sketch-cost.sh [WEIR...]    (default: this repo's release build; N=21 rounds)
#
# Run bench/compare.sh once first (it builds the workload, $BENCH_DIR/w1000.log.gz).
set -euo pipefail
. "$(dirname "$0")/env.sh"
N=${N:-21}
gz="$work/w1000.log.gz"
[ -s "$gz" ] || { echo "run bench/compare.sh first (it builds $gz)" >&2; exit 1; }
if [ $# -eq 0 ]; then
  bench_build
  set -- "$weir"
fi
out=$(mktemp)
db="$work/sketch-cost.db"
trap 'rm -rf "$db" "$out"' EXIT
for i in $(seq "$N"); do
  for w in "$@"; do
    modes=(sk nosk)
    [ $((i % 2)) -eq 0 ] && modes=(nosk sk)
    for m in "${modes[@]}"; do
      flag=()
      [ "$m" = nosk ] && flag=(--no-sketches)
      rm -rf "$db"
      /usr/bin/time -f "$i $w $m %e %U %S" "$w" import -q "${flag[@]}" --db "$db" "$gz" 2>>"$out"
    done
  done
done
python3 - "$out" "$@" <<'PY'
import collections, math, statistics, sys
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 6:
        d[(p[1], p[0])][p[2]] = (float(p[3]), float(p[4]) + float(p[5]))
for w in sys.argv[2:]:
    rounds = [v for (b, _), v in d.items() if b == w and len(v) == 2]
    med = lambda xs: statistics.median(list(xs))
    print(f"{w}: {len(rounds)} rounds; default {med(r['sk'][0] for r in rounds):.2f} s, "
          f"--no-sketches {med(r['nosk'][0] for r in rounds):.2f} s; sketches cost "
          f"+{med(r['sk'][0] - r['nosk'][0] for r in rounds):.2f} s of wall time "
          f"(+{100 * med(r['sk'][0] / r['nosk'][0] - 1 for r in rounds):.1f}%), "
          f"+{med(r['sk'][1] - r['nosk'][1] for r in rounds):.2f} s of CPU (target: 10%)")
    # How far the median of the per-round ratios can be trusted: a distribution-free 95%
    # confidence interval from order statistics (the k-th smallest and largest of n, with k
    # the largest such that P(Binomial(n, 1/2) < k) <= 2.5%).
    pct = sorted(100 * (r['sk'][0] / r['nosk'][0] - 1) for r in rounds)
    n = len(pct)
    k, tail = 0, 1  # tail: 2^n P(Binomial(n, 1/2) <= k)
    while k < n and tail / 2 ** n <= 0.025:
        k += 1
        tail += math.comb(n, k)
    if k >= 1:
        print(f"  95% confidence interval of the median cost: +{pct[k - 1]:.1f}% to "
              f"+{pct[n - k]:.1f}% ({n} rounds)")
    # Contention on a shared machine only ever adds time: the fastest run of each mode is the
    # least disturbed, so their ratio is a second estimate, steadier than the medians when
    # the machine is noisy.
    lo_sk, lo_nosk = min(r['sk'][0] for r in rounds), min(r['nosk'][0] for r in rounds)
    print(f"  fastest runs: default {lo_sk:.2f} s, --no-sketches {lo_nosk:.2f} s: "
          f"+{100 * (lo_sk / lo_nosk - 1):.1f}%")
PY

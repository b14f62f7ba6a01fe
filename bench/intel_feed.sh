#!/usr/bin/env bash
# Writes N (default 1,000,000) mixed indicators as a Zeek Intel file into
# $BENCH_DIR/intel-N.dat (once: deterministic, kept) and prints its path. Used by
# bench/intel_memory.sh and bench/compare.sh. The mix: addresses, subnets, domains, URLs,
# file hashes (MD5, SHA-1, SHA-256 lengths) and software, one sixth each, with a
# `meta.source` drawn from 12 feeds (repeating, as real feeds' do), a `meta.desc` on every
# third (64 distinct texts) plus a unique one on 1 in 50, and a confidence on half.
set -euo pipefail
N=${1:-1000000}
. "$(dirname "$0")/env.sh"
intel="$work/intel-$N.dat"
if [ ! -s "$intel" ]; then
  awk -v n="$N" 'BEGIN {
    OFS = "\t"
    print "#fields", "indicator", "indicator_type", "meta.source", "meta.desc", "meta.confidence", "meta.do_notice"
    for (i = 0; i < n; i++) {
      k = int(i / 6); t = i % 6
      h = (k * 2654435761) % 4294967296
      if (t == 0) { v = sprintf("%d.%d.%d.%d", 1 + int(k / 65536) % 223, int(k / 256) % 256, k % 256, 1 + h % 254); ty = "Intel::ADDR" }
      else if (t == 1) { v = sprintf("%d.%d.%d.0/24", 1 + int(k / 65536) % 223, int(k / 256) % 256, k % 256); ty = "Intel::SUBNET" }
      else if (t == 2) { v = sprintf("x%07x-%d.bad%d.example.com", h % 268435456, k, k % 97); ty = "Intel::DOMAIN" }
      else if (t == 3) { v = sprintf("h%d.malware%d.net/gate/%08x.php?id=%d", k % 5000, k % 13, h, k); ty = "Intel::URL" }
      else if (t == 4) {
        v = sprintf("%08x%08x%08x%08x", k, h, (k * 40503) % 4294967296, (h * 7) % 4294967296)
        if (k % 3 == 1) v = v sprintf("%08x", (h * 13) % 4294967296)
        if (k % 3 == 2) v = v sprintf("%08x%08x%08x%08x", (h * 17) % 4294967296, (k * 31) % 4294967296, h, k)
        ty = "Intel::FILE_HASH"
      }
      else { v = sprintf("Mozilla/5.0 (compatible; BadBot/%d.%d; +http://bot%d.example)", k % 100, k, k % 7); ty = "Intel::SOFTWARE" }
      src = sprintf("feed-%02d.threatintel.example", (k * 7 + t) % 12)
      if (i % 50 == 7) desc = sprintf("seen in campaign %d against %s", i, v)
      else if (i % 3 == 0) desc = sprintf("C2 infrastructure of malware family %d", i % 64)
      else desc = "-"
      conf = (i % 2 == 0) ? sprintf("%d", 50 + i % 50) : "-"
      print v, ty, src, desc, conf, "F"
    }
  }' > "$intel.tmp"
  mv "$intel.tmp" "$intel"
fi
echo "$intel"

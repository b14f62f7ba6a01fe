#!/usr/bin/env bash
# Installs what bench/compare.sh measures against: pigz, GNU time (peak RSS), and DuckDB's
# Python package. Each is optional: compare.sh skips a peer that is still missing, with a note.
set -u
need=()
command -v pigz >/dev/null || need+=(pigz)
[ -x /usr/bin/time ] || need+=(time)
command -v bc >/dev/null || need+=(bc)
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  echo "bench/setup.sh: installing ${need[*]} (apt)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 \
    || echo "bench/setup.sh: could not install ${need[*]}" >&2
fi
if ! python3 -c 'import duckdb' 2>/dev/null; then
  echo "bench/setup.sh: installing duckdb (pip)" >&2
  python3 -m pip install -q duckdb >/dev/null 2>&1 || echo "bench/setup.sh: could not install duckdb" >&2
fi
exit 0

#!/usr/bin/env bash
# Memory and descriptors of `weir import --follow` over many matching files (issue 32's
# target: 10,000 files, 1,000 of them growing, under `ulimit -n 256`, in at most 200 MiB RSS,
# nothing lost).
#
#   bench/follow_many.sh [WEIR] [FILES] [GROWING] [ROUNDS]
#
# Writes FILES small Zeek logs (3 events each) into a temporary directory, follows them under
# `ulimit -n 256`, then appends 2 events to each of the first GROWING files ROUNDS times,
# waits until the archive holds every event, and prints the peak RSS (VmHWM), the most
# descriptors seen open, and whether the count is exact.
set -euo pipefail
weir=${1:-target/release/weir}
files=${2:-10000}
growing=${3:-1000}
rounds=${4:-3}
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir "$work/logs"
python3 - "$work/logs" "$files" <<'EOF'
import sys
d, n = sys.argv[1], int(sys.argv[2])
hdr = "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tf\n#fields\tts\tuid\n#types\ttime\tstring\n"
for k in range(n):
    with open(f"{d}/f{k}.log", "w") as f:
        f.write(hdr + "".join(f"1600000000.{i:06d}\tC{k:06d}x{i:04d}\n" for i in range(3)))
EOF
(ulimit -n 256 && exec "$weir" import -q --db "$work/db" --follow "$work/logs/*.log") &
pid=$!
maxfd=0
sample() {
  local n
  n=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
  [ "$n" -gt "$maxfd" ] && maxfd=$n
  return 0
}
want=$((files * 3))
wait_for() {
  for _ in $(seq 1200); do
    sample
    got=$("$weir" count --db "$work/db" 2>/dev/null || echo 0)
    [ "$got" -ge "$1" ] && return 0
    sleep 0.5
  done
  echo "timed out at $got of $1 events"; exit 1
}
start=$(date +%s.%N)
wait_for "$want"
echo "read $files files in $(echo "$(date +%s.%N) - $start" | bc) s"
for r in $(seq "$rounds"); do
  python3 - "$work/logs" "$growing" "$r" <<'EOF'
import sys
d, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for k in range(n):
    with open(f"{d}/f{k}.log", "a") as f:
        f.write("".join(f"1600000001.{i:06d}\tC{k:06d}r{r}{i:03d}\n" for i in range(2)))
EOF
  want=$((want + growing * 2))
  wait_for "$want"
done
sleep 2
got=$("$weir" count --db "$work/db")
hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status)
kill -TERM "$pid"; wait "$pid" || true
distinct=$("$weir" export --db "$work/db" --to json | python3 -c 'import sys,json; print(len({json.loads(l)["uid"] for l in sys.stdin}))')
echo "files $files, growing $growing x $rounds rounds: events $got (want $want, distinct uids $distinct)"
echo "peak RSS $((hwm / 1024)) MiB, most descriptors open $maxfd (ulimit -n 256)"
[ "$got" -eq "$want" ] && [ "$distinct" -eq "$want" ]

#!/usr/bin/env python3
"""Rates and lag of `weir import --follow` on a directory of growing Zeek logs.

A writer appends events (lines of `examples/generate` output) to N logs at a steady total
rate, in 10 ms ticks, while `weir import --follow 'DIR/*.log'` runs; a monitor polls
`weir count` every 100 ms. For every event the writer notes when it was appended, and the
monitor when the archive first held that many events (committed: in the write-ahead log,
visible to readers). Reported:

- events/s: committed events over the writing time (sustained when lag stays flat);
- lag in seconds from append to commit: median and 99th percentile over all events;
- lag in bytes: bytes appended but not yet committed, median and maximum over the samples.

    cargo build --release --bin weir --example generate
    python3 benches/follow_lag.py --rate 20000 --seconds 20 --logs 10

Events are committed in arrival order, so the k-th committed event is (about) the k-th
appended one; with 10 logs written in the same tick that is exact to within a tick.
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lines_of(generate, log, seed, events):
    out = subprocess.run(
        [generate, "--events", str(events), "--log", log, "--seed", str(seed)],
        check=True,
        capture_output=True,
    ).stdout.decode()
    header, rows = [], []
    for line in out.splitlines(keepends=True):
        if line.startswith("#"):
            if not rows:
                header.append(line)
        else:
            rows.append(line)
    return "".join(header), rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=20000, help="events per second, all logs")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--logs", type=int, default=10)
    ap.add_argument("--weir", default=os.path.join(ROOT, "target/release/weir"))
    ap.add_argument("--generate", default=os.path.join(ROOT, "target/release/examples/generate"))
    ap.add_argument("--batch-timeout", default="1s")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="weir-follow-lag-")
    logs = os.path.join(tmp, "logs")
    os.mkdir(logs)
    db = os.path.join(tmp, "db")
    per_log = int(args.rate * args.seconds / args.logs) + 1
    kinds = ["conn", "dns", "http"]
    sources = []
    for i in range(args.logs):
        kind = kinds[i % len(kinds)]
        header, rows = lines_of(args.generate, kind, i + 1, per_log)
        path = os.path.join(logs, f"{kind}{i}.log")
        with open(path, "w") as f:
            f.write(header)
        sources.append((open(path, "a"), rows))

    weir = subprocess.Popen(
        [args.weir, "import", "-q", "--db", db, "--follow", "--batch-timeout",
         args.batch_timeout, "--metrics", os.path.join(tmp, "metrics.json"),
         os.path.join(logs, "*.log")],
        stdin=subprocess.DEVNULL,
    )
    time.sleep(1.0)

    appended = []  # (time, cumulative events, cumulative bytes) after each tick
    done = threading.Event()

    def writer():
        tick = 0.01
        per_tick = args.rate * tick / args.logs
        owed = 0.0
        start = time.monotonic()
        n = 0
        nbytes = 0
        pos = 0
        k = 0
        while time.monotonic() - start < args.seconds:
            k += 1
            owed += per_tick
            take = int(owed)
            owed -= take
            for f, rows in sources:
                chunk = "".join(rows[pos:pos + take])
                f.write(chunk)
                f.flush()
                nbytes += len(chunk.encode())
            pos += take
            n += take * len(sources)
            appended.append((time.monotonic(), n, nbytes))
            delay = start + k * tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        done.set()

    samples = []  # (time, committed events)

    def monitor():
        while True:
            out = subprocess.run([args.weir, "count", "--db", db], capture_output=True)
            t = time.monotonic()
            try:
                c = int(out.stdout.decode().strip())
            except ValueError:
                c = 0
            samples.append((t, c))
            if done.is_set() and appended and c >= appended[-1][1]:
                break
            if done.is_set() and t - appended[-1][0] > 60:
                print("weir did not catch up within 60 s", file=sys.stderr)
                break
            time.sleep(0.1)

    w = threading.Thread(target=writer)
    m = threading.Thread(target=monitor)
    t0 = time.monotonic()
    w.start()
    m.start()
    w.join()
    m.join()
    weir.send_signal(signal.SIGTERM)
    weir.wait()

    total = appended[-1][1]
    write_secs = appended[-1][0] - t0
    caught_up = samples[-1][0]
    # Seconds from append to commit, per tick (every event of a tick has its tick's time).
    lags = []
    j = 0
    prev = 0
    for (ta, n, _) in appended:
        while j < len(samples) and samples[j][1] < n:
            j += 1
        if j == len(samples):
            break
        lags.extend([samples[j][0] - ta] * (n - prev))
        prev = n
    # Bytes appended but not committed, at each monitor sample during writing.
    behind = []
    for (ts, c) in samples:
        if ts > appended[-1][0]:
            break
        a = max((x for x in appended if x[0] <= ts), default=None, key=lambda x: x[0])
        if a is None:
            continue
        # bytes of the first c events, by interpolation over the ticks
        cb = next((x[2] for x in appended if x[1] >= c), a[2])
        behind.append(max(0, a[2] - cb))
    lags.sort()
    print(f"logs={args.logs} rate={args.rate}/s seconds={args.seconds} events={total} "
          f"bytes={appended[-1][2]}")
    print(f"committed {samples[-1][1]} events; {total / (caught_up - t0):.0f} events/s "
          f"(writing {write_secs:.1f} s, caught up {caught_up - appended[-1][0]:.2f} s after)")
    if lags:
        print(f"lag append->commit: median {statistics.median(lags):.3f} s, "
              f"p99 {lags[int(len(lags) * 0.99) - 1]:.3f} s, max {lags[-1]:.3f} s")
    if behind:
        print(f"lag bytes: median {statistics.median(behind):.0f}, max {max(behind)}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

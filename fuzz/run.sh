#!/usr/bin/env bash
# Builds the fuzz targets and runs each for SECONDS (default 60):
#   bash fuzz/run.sh [SECONDS] [TARGET...]
#   FUZZ_SMOKE=1 bash fuzz/run.sh 5     CI's smoke: an unoptimized build without a sanitizer, which
#                                        builds in under two minutes (ASan + release: ~7)
# Installs cargo-fuzz (from crates.io) when missing. Uses nightly with AddressSanitizer when a
# nightly toolchain exists, else stable without a sanitizer (said in the output). Each target
# starts from its committed seeds (fuzz/seeds/TARGET) and its generated corpus
# (fuzz/corpus/TARGET, not committed); a crash, hang (-timeout) or memory use above
# -rss_limit_mb is written to fuzz/artifacts/TARGET and fails the run (after all targets ran).
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:-60}
shift || true

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    start=$SECONDS
    cargo install cargo-fuzz --locked
    echo "cargo-fuzz installed in $((SECONDS - start)) s"
fi

if cargo +nightly --version >/dev/null 2>&1; then
    fuzz=(cargo +nightly fuzz)
    flags=()
    san=", AddressSanitizer"
    [ -n "${FUZZ_SMOKE:-}" ] && san=""
    echo "== toolchain: nightly ($(cargo +nightly --version))$san"
else
    fuzz=(cargo fuzz)
    flags=(--sanitizer none)
    echo "== toolchain: stable ($(cargo --version)), no nightly: --sanitizer none"
fi

if [ -n "${FUZZ_SMOKE:-}" ]; then
    flags=(--dev --sanitizer none)
    echo "== FUZZ_SMOKE: unoptimized, no sanitizer (panics, hangs and memory limits still fail)"
fi

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <("${fuzz[@]}" list)
fi

echo "== building ${targets[*]}"
start=$SECONDS
"${fuzz[@]}" build "${flags[@]}" >build.log 2>&1 || { cat build.log; exit 1; }
echo "built in $((SECONDS - start)) s"

failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t"
    start=$SECONDS
    log="corpus/$t.log"
    if "${fuzz[@]}" run "${flags[@]}" "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1; then
        status=ok
    else
        status=FAILED
        failed+=("$t")
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    echo "$t: $status, ${execs:-?} executions in $((SECONDS - start)) s"
    if [ "$status" = FAILED ]; then
        grep -E "ERROR|panicked|Test unit written|SUMMARY" "$log" | head -20 || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "== findings in: ${failed[*]} (logs: fuzz/corpus/TARGET.log, inputs: fuzz/artifacts/TARGET/)"
    exit 1
fi

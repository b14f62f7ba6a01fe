//! The Zeek TSV readers on arbitrary bytes. The first byte picks the chunk size the input
//! arrives in (as `FramedRead` hands it to the push decoder), the second the options. Three
//! readers must agree: the push decoder on the whole input, the push decoder fed chunk by
//! chunk, and `ParallelTsvReader` (documented as identical to the push decoder).
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
use weir::unstable::codec::zeek::tsv::TsvDecoder;
use weir::unstable::codec::{collect_batches, decode_chunks, ReaderOptions};
use weir::unstable::error::{OnError, SkipReport};
use weir::unstable::value::Value;

type Rows = Vec<(String, usize, Vec<Value>)>;
type Outcome = (Rows, Option<String>, SkipReport);

fn rows_of(batches: &[Batch], out: &mut Rows) {
    for b in batches {
        assert!(!b.is_empty(), "an empty batch was emitted");
        for row in b.to_values().expect("emitted rows decode") {
            assert_eq!(row.len(), b.schema().fields.len());
            out.push((b.schema().name.clone(), b.schema().fields.len(), row));
        }
    }
}

/// The push decoder as `FramedRead` drives it: `decode` until it wants more, then the next
/// chunk; at the end `decode_eof` until it is done. Stops at the first error.
fn push(text: &[u8], chunk: usize, opts: ReaderOptions) -> Outcome {
    let mut d = TsvDecoder::new(opts);
    let (batches, error) = decode_chunks(&mut d, text.chunks(chunk));
    let error = error.map(|e| e.to_string());
    let mut rows = Vec::new();
    rows_of(&batches, &mut rows);
    (rows, error, d.skip_report().clone())
}

fn parallel(text: &[u8], chunk: usize, piece: usize, opts: ReaderOptions) -> Outcome {
    let chunks: Vec<std::io::Result<Vec<u8>>> =
        text.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
    let mut r = ParallelTsvReader::new(chunks.into_iter(), opts, 2).with_piece_bytes(piece);
    let (batches, error) = collect_batches(&mut r);
    let error = error.map(|e| e.to_string());
    let mut rows = Vec::new();
    rows_of(&batches, &mut rows);
    (rows, error, r.skip_report().clone())
}

fuzz_target!(|data: &[u8]| {
    let [c, o, text @ ..] = data else { return };
    let chunk = 1 + *c as usize;
    let opts = ReaderOptions {
        on_error: if o & 1 == 0 {
            OnError::Fail
        } else {
            OnError::Skip
        },
        batch_rows: 1 + (*o as usize >> 1 & 7),
        max_line_len: if o & 16 == 0 { 1 << 20 } else { 64 },
        ..ReaderOptions::new("fuzz")
    };
    let piece = 1 + (*o as usize >> 5) * 40;
    let whole = push(text, usize::MAX, opts.clone());
    let chunked = push(text, chunk, opts.clone());
    assert_eq!(chunked, whole, "chunks of {chunk} bytes read differently");
    let par = parallel(text, chunk, piece, opts);
    assert_eq!(par.1, whole.1, "the parallel reader's error differs");
    if whole.1.is_none() {
        assert_eq!(par, whole, "the parallel reader's rows differ");
    }
});

//! The Zeek JSON reader on arbitrary bytes. The first byte picks the chunk size the input
//! arrives in, the second the options; chunked and whole input must read the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::codec::zeek::json::JsonDecoder;
use weir::codec::{decode_chunks, ReaderOptions};
use weir::error::{OnError, SkipReport};
use weir::value::Value;

type Outcome = (Vec<(String, usize, Vec<Value>)>, Option<String>, SkipReport);

fn push(text: &[u8], chunk: usize, opts: ReaderOptions, unset: bool) -> Outcome {
    let mut d = JsonDecoder::new(opts).absent_as_unset(unset);
    let (batches, error) = decode_chunks(&mut d, text.chunks(chunk));
    let error = error.map(|e| e.to_string());
    let mut rows = Vec::new();
    for b in &batches {
        assert!(!b.is_empty(), "an empty batch was emitted");
        for row in b.to_values().expect("emitted rows decode") {
            assert_eq!(row.len(), b.schema().fields.len());
            rows.push((b.schema().name.clone(), b.schema().fields.len(), row));
        }
    }
    (rows, error, d.skip_report().clone())
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
    let unset = o & 32 != 0;
    let whole = push(text, usize::MAX, opts.clone(), unset);
    let chunked = push(text, chunk, opts, unset);
    assert_eq!(chunked, whole, "chunks of {chunk} bytes read differently");
});

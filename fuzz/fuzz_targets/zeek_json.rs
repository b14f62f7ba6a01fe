//! The Zeek JSON reader on arbitrary bytes. The first byte picks the chunk size the input
//! arrives in, the second the options; chunked and whole input must read the same (but for
//! which rows of a typed log get a schema widened mid-log, as the reader documents).
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir::unstable::codec::zeek::json::JsonDecoder;
use weir::unstable::codec::{decode_chunks, ReaderOptions};
use weir::unstable::error::{OnError, SkipReport};
use weir::unstable::value::Value;

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
    if !same_but_widening(&chunked, &whole) {
        assert_eq!(chunked, whole, "chunks of {chunk} bytes read differently");
    }
});

/// Whether two reads of one input agree but for the reader's one documented difference (the
/// `json` module docs, "Typed logs"): a typed log's schema widened mid-log by a new field is
/// given to the rows still pending, so where batches were cut decides which early rows have
/// the narrower schema. Such a row lacks only trailing fields, which the wider one has unset.
fn same_but_widening(a: &Outcome, b: &Outcome) -> bool {
    a.1 == b.1
        && a.2 == b.2
        && a.0.len() == b.0.len()
        && a.0
            .iter()
            .zip(&b.0)
            .all(|((name_a, _, ra), (name_b, _, rb))| {
                let (short, long) = if ra.len() <= rb.len() {
                    (ra, rb)
                } else {
                    (rb, ra)
                };
                name_a == name_b
                    && long[..short.len()] == short[..]
                    && long[short.len()..].iter().all(|v| *v == Value::Null)
            })
}

//! The parallel TSV reader gives exactly what the sequential decoder gives: rows, schemas,
//! errors (with their line numbers) and skip reports, whatever the chunking and thread count.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use proptest::prelude::*;
use weir::unstable::batch::Batch;
use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
use weir::unstable::codec::zeek::tsv::TsvDecoder;
use weir::unstable::codec::ReaderOptions;
use weir::unstable::error::{OnError, SkipReport};
use weir::unstable::value::Value;

/// Everything a reader produced, normalized: (schema name, field count, rows) per row, in order,
/// the error text if it stopped, and the skip report.
type Outcome = (Vec<(String, usize, Vec<Value>)>, Option<String>, SkipReport);

fn rows_of(batches: &[Batch]) -> Vec<(String, usize, Vec<Value>)> {
    let mut out = Vec::new();
    for b in batches {
        for row in b.to_values().expect("rows decode") {
            out.push((b.schema().name.clone(), b.schema().fields.len(), row));
        }
    }
    out
}

fn sequential(text: &[u8], opts: ReaderOptions) -> Outcome {
    let mut d = TsvDecoder::new(opts);
    let mut batches = Vec::new();
    let mut buf = bytes::BytesMut::from(text);
    let mut error = None;
    loop {
        match tokio_util::codec::Decoder::decode_eof(&mut d, &mut buf) {
            Ok(Some(b)) => batches.push(b),
            Ok(None) => break,
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    (rows_of(&batches), error, d.skip_report().clone())
}

fn parallel(
    text: &[u8],
    cuts: &[usize],
    opts: ReaderOptions,
    threads: usize,
    piece: usize,
) -> Outcome {
    let mut chunks = Vec::new();
    let mut last = 0;
    for &c in cuts {
        let c = c.min(text.len());
        if c >= last {
            chunks.push(Ok(text[last..c].to_vec()));
            last = c;
        }
    }
    chunks.push(Ok(text[last..].to_vec()));
    let mut r = ParallelTsvReader::new(chunks.into_iter(), opts, threads).with_piece_bytes(piece);
    let (batches, error) = weir::unstable::codec::collect_batches(&mut r);
    (
        rows_of(&batches),
        error.map(|e| e.to_string()),
        r.skip_report().clone(),
    )
}

fn opts(mode: OnError) -> ReaderOptions {
    ReaderOptions {
        on_error: mode,
        ..ReaderOptions::new("test.log")
    }
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = common::fixtures();
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixtures dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).expect("fixture")))
        .collect();
    out.sort();
    // Everything at once, so that header blocks change mid-stream and errors come late.
    let all: Vec<u8> = out.iter().flat_map(|(_, t)| t.clone()).collect();
    out.push(("all fixtures".into(), all));
    out
}

#[test]
fn fixtures_match_sequential_in_both_error_modes() {
    for (name, text) in fixtures() {
        for mode in [OnError::Fail, OnError::Skip] {
            let want = sequential(&text, opts(mode));
            for threads in [1, 3] {
                for piece in [1, 64, 1 << 20] {
                    let cuts: Vec<usize> = (1..text.len()).step_by(97).collect();
                    let got = parallel(&text, &cuts, opts(mode), threads, piece);
                    if mode == OnError::Fail && want.1.is_some() {
                        // The sequential decode_eof loop drops rows of a failed batch; compare
                        // the error and a prefix of the rows.
                        assert_eq!(
                            got.1, want.1,
                            "{name}: error, {threads} threads, piece {piece}"
                        );
                        assert!(got.0.len() >= want.0.len(), "{name}");
                        assert_eq!(&got.0[..want.0.len()], &want.0[..], "{name}");
                    } else {
                        assert_eq!(
                            got, want,
                            "{name}: {mode:?}, {threads} threads, piece {piece}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn corpus_matches_sequential() {
    let Some(dir) = common::corpus::dir() else {
        return;
    };
    let mut all = Vec::new();
    for path in common::corpus::files(&dir) {
        if path.extension().is_some_and(|e| e == "json") {
            continue;
        }
        all.extend(common::gz::read_maybe_gz(&path));
    }
    let want = sequential(&all, opts(OnError::Fail));
    assert!(want.1.is_none(), "corpus decodes: {:?}", want.1);
    assert!(want.0.len() > 18_000);
    let cuts: Vec<usize> = (0..all.len()).step_by(1 << 16).map(|c| c + 17).collect();
    let got = parallel(&all, &cuts, opts(OnError::Fail), 2, 300_000);
    assert_eq!(got.0.len(), want.0.len());
    assert!(got == want, "parallel and sequential differ on the corpus");
}

#[test]
fn overlong_line_is_reported_at_its_line() {
    let mut text = b"#fields\tn\n#types\tcount\n1\n2\n".to_vec();
    text.extend(std::iter::repeat_n(b'7', 5000));
    text.extend(b"\n3\n");
    for mode in [OnError::Fail, OnError::Skip] {
        let o = ReaderOptions {
            max_line_len: 1000,
            ..opts(mode)
        };
        let cuts: Vec<usize> = (0..text.len()).step_by(300).collect();
        let got = parallel(&text, &cuts, o.clone(), 2, 64);
        let want = sequential(&text, o);
        match mode {
            OnError::Fail => {
                let e = got.1.expect("an error");
                assert!(e.contains("test.log:5:"), "{e}");
                assert_eq!(Some(e), want.1);
            }
            OnError::Skip => {
                assert_eq!(got.0.len(), 3, "rows 1, 2 and 3 survive");
                assert_eq!(got.2.skipped, 1);
                assert_eq!(got.2.first[0].line, 5);
                assert_eq!(got.2.first[0].line, want.2.first[0].line);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn any_chunking_gives_the_same_rows(
        cuts in proptest::collection::vec(0usize..4000, 0..30),
        threads in 1usize..4,
        piece in 1usize..600,
        skip in any::<bool>(),
    ) {
        let (_, text) = fixtures().pop().expect("fixtures");
        let mut cuts = cuts;
        cuts.sort_unstable();
        let mode = if skip { OnError::Skip } else { OnError::Fail };
        let want = sequential(&text, opts(mode));
        let got = parallel(&text, &cuts, opts(mode), threads, piece);
        prop_assert_eq!(&got.1, &want.1);
        if want.1.is_none() {
            prop_assert_eq!(got, want);
        }
    }
}

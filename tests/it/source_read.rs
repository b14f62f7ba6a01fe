//! Sources: decompression (gzip members, zstd), format detection, glob order, counters.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use crate::common;

use std::sync::Arc;

use common::gz::gzip;

use tokio::io::AsyncReadExt;
use weir::unstable::source::{
    detect_format, expand_inputs, inflate, open, Compression, Format, Input, SourceCounters,
    SourceError,
};

async fn zstd(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let mut enc = async_compression::tokio::bufread::ZstdEncoder::new(*p);
        enc.read_to_end(&mut out).await.unwrap();
    }
    out
}

async fn read_all(input: Input, c: Compression) -> (Vec<u8>, Arc<SourceCounters>) {
    let counters = Arc::new(SourceCounters::default());
    let (_, _, mut r) = open(input, c, &counters, &Default::default())
        .await
        .unwrap();
    let mut out = Vec::new();
    r.read_to_end(&mut out).await.unwrap();
    (out, counters)
}

#[tokio::test]
async fn gzip_members_are_one_stream() {
    let gz = gzip(&[b"#separator \\x09\nfirst\n", b"second\n", b"third"]);
    for c in [Compression::Auto, Compression::Gzip] {
        let (out, counters) = read_all(Input::bytes("mem.gz", gz.clone()), c).await;
        assert_eq!(out, b"#separator \\x09\nfirst\nsecond\nthird");
        assert_eq!(counters.bytes_read(), gz.len() as u64);
        assert_eq!(counters.bytes_decoded(), out.len() as u64);
    }
}

#[tokio::test]
async fn gzip_file_members_decode_in_parallel_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.log.gz");
    let parts: Vec<Vec<u8>> = (0..20)
        .map(|k| {
            (0..500)
                .map(|i| format!("{k} {i}\n"))
                .collect::<String>()
                .into_bytes()
        })
        .collect();
    let refs: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
    let gz = gzip(&refs);
    std::fs::write(&path, &gz).unwrap();
    let (out, counters) = read_all(Input::Path(path), Compression::Auto).await;
    assert_eq!(out, parts.concat());
    assert_eq!(counters.bytes_read(), gz.len() as u64);

    // One member bigger than ParallelGunzip's window (decoded by streaming): counted too.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let big: Vec<u8> = (0..inflate::DEFAULT_WINDOW + (1 << 20))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let gz = gzip(&[&big[..]]);
    assert!(gz.len() > inflate::DEFAULT_WINDOW, "{}", gz.len());
    let path = dir.path().join("big.log.gz");
    std::fs::write(&path, &gz).unwrap();
    let (out, counters) = read_all(Input::Path(path), Compression::Auto).await;
    assert!(out == big);
    assert_eq!(counters.bytes_read(), gz.len() as u64);
}

#[tokio::test]
async fn zstd_frames_are_one_stream() {
    let z = zstd(&[b"{\"a\":1}\n", b"{\"a\":2}\n"]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.json.zst");
    std::fs::write(&path, &z).unwrap();
    let (out, _) = read_all(Input::Path(path), Compression::Auto).await;
    assert_eq!(out, b"{\"a\":1}\n{\"a\":2}\n");
    let (out, _) = read_all(Input::bytes("m", z), Compression::Zstd).await;
    assert_eq!(out, b"{\"a\":1}\n{\"a\":2}\n");
}

#[tokio::test]
async fn plain_input_passes_through_and_short_inputs_work() {
    for text in [&b""[..], b"x", b"\x1f", b"#fields\ta\n"] {
        let (out, _) = read_all(Input::bytes("m", text.to_vec()), Compression::Auto).await;
        assert_eq!(out, text);
    }
}

#[tokio::test]
async fn format_is_detected_by_first_non_blank_byte() {
    let cases: [(&[u8], Format); 4] = [
        (b"\n\n  {\"_path\":\"conn\"}\n", Format::ZeekJson),
        (b"#separator \\x09\n", Format::ZeekTsv),
        (b"", Format::ZeekTsv),
        (b"\r\n\t", Format::ZeekTsv),
    ];
    for (text, want) in cases {
        let counters = Arc::new(SourceCounters::default());
        let gz = gzip(&[text]);
        let (_, _, r) = open(
            Input::bytes("m", gz),
            Compression::Auto,
            &counters,
            &Default::default(),
        )
        .await
        .unwrap();
        let (found, mut r) = detect_format(r, Format::Auto).await.unwrap();
        assert_eq!(found, want, "{text:?}");
        // Nothing is lost by peeking.
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, text);
    }
}

#[test]
fn globs_expand_in_sorted_order_and_keep_argument_order() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["b.log", "a.log", "c.log", "z.txt"] {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let pattern = format!("{}/*.log", dir.path().display());
    let z = format!("{}/z.txt", dir.path().display());
    let inputs = expand_inputs(&[z.as_str(), pattern.as_str(), "-"]).unwrap();
    let names: Vec<String> = inputs
        .iter()
        .map(|i| match i {
            Input::Path(p) => p.file_name().unwrap().to_string_lossy().into_owned(),
            other => other.name(),
        })
        .collect();
    assert_eq!(names, ["z.txt", "a.log", "b.log", "c.log", "<stdin>"]);
    let none = format!("{}/*.gz", dir.path().display());
    let err = expand_inputs(&[none.as_str()]).unwrap_err();
    assert!(matches!(err, SourceError::NoMatch { .. }));
    assert!(err.to_string().contains("no file matches"));
    assert!(matches!(
        expand_inputs::<&str>(&[]).unwrap()[..],
        [Input::Stdin]
    ));
}

#[tokio::test]
async fn missing_file_names_the_path() {
    let counters = Arc::new(SourceCounters::default());
    let err = open(
        Input::Path("/nonexistent/weir/x.log".into()),
        Compression::Auto,
        &counters,
        &Default::default(),
    )
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("/nonexistent/weir/x.log"), "{err}");
}

#[tokio::test]
async fn corrupt_gzip_is_an_error_not_a_panic() {
    let mut gz = gzip(&[b"hello world, hello world\n"]);
    let n = gz.len();
    gz[n / 2] ^= 0xff;
    gz.truncate(n - 3);
    let counters = Arc::new(SourceCounters::default());
    let (_, _, mut r) = open(
        Input::bytes("bad.gz", gz),
        Compression::Auto,
        &counters,
        &Default::default(),
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    assert!(r.read_to_end(&mut out).await.is_err());
}

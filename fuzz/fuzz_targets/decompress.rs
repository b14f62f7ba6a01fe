//! The decompression path on arbitrary bytes: `ParallelGunzip` (a regular gzip file, members
//! decoded speculatively in parallel) and the streaming path of `source::open` (stdin, pipes,
//! in-memory bytes, zstd). The first byte picks the compression named for the streaming path
//! (auto, gzip, zstd, none). Where zlib reads the input as whole gzip members, `ParallelGunzip`
//! must yield the same bytes. Output is read up to a cap (a small input can expand a lot).
#![no_main]

use std::io::Read;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use tokio::io::AsyncReadExt;
use weir::unstable::source::inflate::ParallelGunzip;
use weir::unstable::source::{open, Compression, Input, SourceCounters};

/// Most output bytes read from one input.
const CAP: usize = 32 << 20;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// `ParallelGunzip`'s output (up to the cap), or the error it stopped at.
fn parallel(data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for chunk in ParallelGunzip::with_window(data, 2, 64 << 10) {
        let chunk = chunk.map_err(|e| e.to_string())?;
        out.extend_from_slice(&chunk);
        if out.len() > CAP {
            break;
        }
    }
    Ok(out)
}

/// zlib's reading of the input as concatenated gzip members, when it reads all of it.
fn reference(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(data).take(CAP as u64 + 1);
    d.read_to_end(&mut out).ok()?;
    (out.len() <= CAP).then_some(out)
}

async fn streaming(data: Vec<u8>, c: Compression) {
    let counters = Arc::new(SourceCounters::default());
    let Ok((_, _, r)) = open(
        Input::bytes("fuzz", data),
        c,
        &counters,
        &Default::default(),
    )
    .await
    else {
        return;
    };
    let mut out = Vec::new();
    let _ = r.take(CAP as u64).read_to_end(&mut out).await;
}

fuzz_target!(|data: &[u8]| {
    let [mode, input @ ..] = data else { return };
    let got = parallel(input);
    if let Some(want) = reference(input) {
        let got = got.expect("ParallelGunzip refused what zlib reads");
        assert!(got == want, "ParallelGunzip's output differs from zlib's");
    }
    let c = match mode % 4 {
        0 => Compression::Auto,
        1 => Compression::Gzip,
        2 => Compression::Zstd,
        _ => Compression::None,
    };
    runtime().block_on(streaming(input.to_vec(), c));
});

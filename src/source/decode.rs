//! The source stage: inputs read, decompressed and parsed into batches, one thread per
//! input, several inputs ahead, in input order.
//!
//! Each input is handled by a dedicated decode thread (its own single-threaded tokio
//! runtime), fed by the input's reader thread (see [`crate::source`]): decompression and
//! parsing of one input run in parallel with everything downstream. Up to
//! [`SourceConfig::decode_ahead`] inputs are decoded at once, each into its own byte-bounded
//! channel; the stage yields the batches of input 1, then input 2, and so on, so the event
//! order (and the archive IDs) follow the input order. Each input has its own decoder and
//! therefore its own header state.
//!
//! On shutdown (the cancellation token), the input stops reading new bytes; every byte already
//! read (also chunks queued by the reader thread) is still parsed, a trailing partial line is
//! dropped with a warning, and the decode thread ends: nothing read is lost.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::BytesMut;
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use crate::batch::Batch;
use crate::channel;
use crate::codec::zeek::parallel::ParallelTsvReader;
use crate::codec::ReaderOptions;
use crate::error::{ReadError, SkipReport};
use crate::metrics::StageMetrics;
use crate::source::{
    detect_format, open, BoxReader, Compression, Format, Input, SourceCounters, SourceError,
};

/// A batch decoder behind a trait object: a tokio-util [`Decoder`] of batches that can also
/// report the rows it skipped.
pub trait BatchDecoder: Send {
    /// As [`Decoder::decode`].
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError>;
    /// As [`Decoder::decode_eof`].
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError>;
    /// Rows dropped so far under `--on-error skip`.
    fn skip_report(&self) -> SkipReport {
        SkipReport::default()
    }
    /// Takes the warnings collected so far (e.g. unknown type names read as string).
    fn take_warnings(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// Makes the decoder for a format (never [`Format::Auto`]: it is resolved first).
pub type DecoderFactory = Arc<dyn Fn(Format, ReaderOptions) -> Box<dyn BatchDecoder> + Send + Sync>;

/// Adapts a boxed decoder to tokio-util; at the end of an input cut short by shutdown, a
/// partial last line is dropped (with a warning) instead of being parsed.
struct Adapter {
    decoder: Box<dyn BatchDecoder>,
    stop: CancellationToken,
    dropped: usize,
}

impl Decoder for Adapter {
    type Item = Batch;
    type Error = ReadError;
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        self.decoder.decode(src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        if !self.stop.is_cancelled() {
            return self.decoder.decode_eof(src);
        }
        if let Some(b) = self.decoder.decode(src)? {
            return Ok(Some(b));
        }
        self.dropped += src.len();
        src.clear();
        self.decoder.decode_eof(src)
    }
}

/// What the source stage reads and how.
#[derive(Clone)]
pub struct SourceConfig {
    /// Compression of the inputs.
    pub compression: Compression,
    /// Format of the inputs.
    pub format: Format,
    /// Reader settings; `source_name` is set per input.
    pub reader: ReaderOptions,
    /// Makes a decoder per input.
    pub decoders: DecoderFactory,
    /// How many inputs are decoded at once (at least 1).
    pub decode_ahead: usize,
    /// Byte capacity of each input's channel.
    pub channel_capacity: usize,
    /// Threads decoding one Zeek TSV input at once with
    /// [`ParallelTsvReader`] (same output as
    /// the sequential decoder); 0 or 1 decodes TSV with `decoders` on the input's own thread.
    pub parallel_tsv: usize,
    /// Follow these patterns instead of reading the inputs once (see
    /// [`crate::source::follow`]).
    pub follow: Option<crate::source::follow::FollowSpec>,
}

/// Inputs of known size below this (as stored, possibly compressed) are decoded on their own
/// thread even when [`SourceConfig::parallel_tsv`] asks for more.
pub const PARALLEL_MIN_SIZE: u64 = 1 << 20;

/// Everything the decode threads share.
#[derive(Clone)]
pub(crate) struct SourceShared {
    pub cancel: CancellationToken,
    pub counters: Arc<SourceCounters>,
    pub metrics: Arc<StageMetrics>,
    pub skips: Arc<Mutex<SkipReport>>,
    pub warnings: Arc<Mutex<Vec<String>>>,
    /// The runtime that drives readers needing a reactor (from blocking decode threads).
    pub handle: Option<tokio::runtime::Handle>,
}

fn io_error(name: &str, error: io::Error) -> ReadError {
    ReadError::Io {
        source_name: name.to_string(),
        error,
    }
}

/// Names an I/O error that a codec adapter produced without knowing the source.
fn name_error(name: &str, e: ReadError) -> ReadError {
    match e {
        ReadError::Io { error, .. } => io_error(name, error),
        e => e,
    }
}

/// Reads, decompresses and decodes `input`, sending batches (then an error, if any) to `tx`.
async fn decode_input(
    input: Input,
    config: SourceConfig,
    shared: SourceShared,
    tx: channel::Sender<Result<Batch, ReadError>>,
) {
    let name = input.name();
    let result = async {
        let (_, size, reader) = open(input, config.compression, &shared.counters, &shared.cancel)
            .await
            .map_err(|e| match e {
                SourceError::Io { name, error } => io_error(&name, error),
                other => io_error(&name, io::Error::other(other)),
            })?;
        let (format, reader) = detect_format(reader, config.format)
            .await
            .map_err(|e| io_error(&name, e))?;
        let mut options = config.reader.clone();
        options.source_name = name.clone();
        // Small inputs of known size are not worth a pool of threads.
        let small = size.is_some_and(|n| n < PARALLEL_MIN_SIZE);
        if format == Format::ZeekTsv && config.parallel_tsv > 1 && !small {
            return decode_parallel_tsv(&name, reader, options, &config, &shared, &tx).await;
        }
        let decoder = (config.decoders)(format, options);
        let adapter = Adapter {
            decoder,
            stop: shared.cancel.clone(),
            dropped: 0,
        };
        let mut framed = FramedRead::with_capacity(reader, adapter, 1 << 20);
        // On shutdown the reader stops reading and ends after what it already read, so this
        // loop ends by itself with nothing read lost.
        loop {
            let t0 = Instant::now();
            let item = framed.next().await;
            shared.metrics.add_busy(t0.elapsed());
            let batch = match item {
                None => break,
                Some(Ok(b)) => b,
                // Compressed input cut short by shutdown.
                Some(Err(ReadError::Io { error, .. })) if shared.cancel.is_cancelled() => {
                    warn(
                        &shared,
                        format!("{name}: input ended early at shutdown: {error}"),
                    );
                    break;
                }
                Some(Err(e)) => return Err(name_error(&name, e)),
            };
            let warnings = framed.decoder_mut().decoder.take_warnings();
            for w in warnings {
                warn(&shared, format!("{name}: {w}"));
            }
            send(&tx, &shared, Ok(batch)).await?;
        }
        let dropped = framed.decoder().dropped;
        if dropped > 0 {
            warn(
                &shared,
                format!("{name}: dropped a partial last line of {dropped} bytes at shutdown"),
            );
        }
        let report = framed.decoder().decoder.skip_report();
        if let Ok(mut s) = shared.skips.lock() {
            s.merge(&report);
        }
        Ok::<(), ReadError>(())
    }
    .await;
    if let Err(e) = result {
        let _ = tx.send(Err(e)).await;
    }
}

/// Decodes a Zeek TSV input on several threads.
async fn decode_parallel_tsv(
    name: &str,
    reader: BoxReader,
    options: ReaderOptions,
    config: &SourceConfig,
    shared: &SourceShared,
    tx: &channel::Sender<Result<Batch, ReadError>>,
) -> Result<(), ReadError> {
    let dropped = Arc::new(AtomicUsize::new(0));
    let chunks = ChunkIter {
        max_partial: options.max_line_len.saturating_add(2),
        reader,
        handle: shared.handle.clone(),
        stop: shared.cancel.clone(),
        tail: Vec::new(),
        done: false,
        dropped: dropped.clone(),
    };
    let mut par = ParallelTsvReader::new(chunks, options, config.parallel_tsv);
    loop {
        let t0 = Instant::now();
        // Blocking, but on this input's own thread.
        let item = par.next();
        shared.metrics.add_busy(t0.elapsed());
        let batch = match item {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(ReadError::Io { error, .. })) if shared.cancel.is_cancelled() => {
                warn(
                    shared,
                    format!("{name}: input ended early at shutdown: {error}"),
                );
                break;
            }
            Some(Err(e)) => return Err(name_error(name, e)),
        };
        for w in par.take_warnings() {
            warn(shared, format!("{name}: {w}"));
        }
        send(tx, shared, Ok(batch)).await?;
    }
    for w in par.take_warnings() {
        warn(shared, format!("{name}: {w}"));
    }
    let dropped = dropped.load(Ordering::Relaxed);
    if dropped > 0 {
        warn(
            shared,
            format!("{name}: dropped a partial last line of {dropped} bytes at shutdown"),
        );
    }
    if let Ok(mut s) = shared.skips.lock() {
        s.merge(par.skip_report());
    }
    Ok(())
}

/// The decompressed bytes of an input as blocking chunks for [`ParallelTsvReader`]. Each
/// chunk ends at a line end (the partial last line is carried into the next chunk), so that
/// when shutdown cuts the input short, the partial line can be dropped rather than parsed.
/// A partial line longer than `max_partial` is handed over as it is (the reader refuses it as
/// overlong), so that input without newlines never piles up here.
struct ChunkIter {
    max_partial: usize,
    reader: BoxReader,
    handle: Option<tokio::runtime::Handle>,
    stop: CancellationToken,
    tail: Vec<u8>,
    done: bool,
    dropped: Arc<AtomicUsize>,
}

impl ChunkIter {
    /// Appends what the next read gives to `buf`, into its spare capacity (no zeroing).
    fn read(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let fut = self.reader.read_buf(buf);
        match &self.handle {
            Some(h) => h.block_on(fut),
            None => futures::executor::block_on(fut),
        }
    }
}

impl Iterator for ChunkIter {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<io::Result<Vec<u8>>> {
        while !self.done {
            let mut buf = std::mem::take(&mut self.tail);
            let start = buf.len();
            buf.reserve_exact(crate::source::CHUNK_SIZE);
            // One read per chunk, so that a live source's data flows as soon as it arrives.
            let n = match self.read(&mut buf) {
                Ok(n) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            if n == 0 {
                self.done = true;
                if buf.is_empty() {
                    return None;
                }
                if self.stop.is_cancelled() {
                    self.dropped.fetch_add(buf.len(), Ordering::Relaxed);
                    return None;
                }
                return Some(Ok(buf));
            }
            match memchr::memrchr(b'\n', &buf[start..]) {
                Some(i) => {
                    self.tail = buf.split_off(start + i + 1);
                    return Some(Ok(buf));
                }
                // Longer than any line may be: the reader reports it (or skips it).
                None if buf.len() > self.max_partial => return Some(Ok(buf)),
                None => self.tail = buf,
            }
        }
        None
    }
}

fn warn(shared: &SourceShared, text: String) {
    if let Ok(mut w) = shared.warnings.lock() {
        w.push(text);
    }
}

async fn send(
    tx: &channel::Sender<Result<Batch, ReadError>>,
    shared: &SourceShared,
    item: Result<Batch, ReadError>,
) -> Result<(), ReadError> {
    if let Ok(b) = &item {
        if b.is_empty() {
            return Ok(());
        }
    }
    let t0 = Instant::now();
    let r = tx.send(item).await;
    shared.metrics.add_blocked(t0.elapsed());
    // A closed channel means nobody reads this input any more (the pipeline is stopping):
    // stop decoding it. The error goes nowhere, the consumer is gone.
    r.map_err(|_| ReadError::Io {
        source_name: String::new(),
        error: io::Error::other("the consumer of this input is gone"),
    })
}

/// Starts decoding `input` on its own thread; returns the stream of its batches.
fn spawn_input(
    input: Input,
    config: SourceConfig,
    shared: SourceShared,
) -> BoxStream<'static, Result<Batch, ReadError>> {
    let (tx, rx) = channel::channel(config.channel_capacity);
    let name = input.name();
    let thread = std::thread::Builder::new()
        .name(format!("weir-decode {name}"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().build();
            match rt {
                Ok(rt) => {
                    // A panic in a decoder must not look like the end of the input.
                    let guard = tx.clone();
                    let run = std::panic::AssertUnwindSafe(|| {
                        rt.block_on(decode_input(input, config, shared, tx))
                    });
                    if std::panic::catch_unwind(run).is_err() {
                        let e = io::Error::other("the decoder failed unexpectedly (a bug)");
                        let _ = futures::executor::block_on(guard.send(Err(io_error(&name, e))));
                    }
                }
                Err(e) => {
                    let _ = futures::executor::block_on(tx.send(Err(io_error(&name, e))));
                }
            }
        });
    match thread {
        Ok(_) => rx.boxed(),
        Err(e) => stream::iter([Err(io_error(&input_name_fallback(), e))]).boxed(),
    }
}

fn input_name_fallback() -> String {
    "input".to_string()
}

/// The source stage's stream: the batches of every input, in input order, with up to
/// `decode_ahead` inputs decoded at once.
pub(crate) fn source_stream(
    inputs: Vec<Input>,
    config: SourceConfig,
    shared: SourceShared,
) -> BoxStream<'static, Result<Batch, ReadError>> {
    let ahead = config.decode_ahead.max(1);
    stream::iter(inputs)
        .map(move |input| {
            let stream = spawn_input(input, config.clone(), shared.clone());
            futures::future::ready(stream)
        })
        .buffered(ahead)
        .flatten()
        .boxed()
}

impl BatchDecoder for crate::codec::zeek::tsv::TsvDecoder {
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode(self, src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode_eof(self, src)
    }
    fn skip_report(&self) -> SkipReport {
        crate::codec::zeek::tsv::TsvDecoder::skip_report(self).clone()
    }
    fn take_warnings(&mut self) -> Vec<String> {
        crate::codec::zeek::tsv::TsvDecoder::take_warnings(self)
    }
}

impl BatchDecoder for crate::codec::zeek::json::JsonDecoder {
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode(self, src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode_eof(self, src)
    }
    fn skip_report(&self) -> SkipReport {
        crate::codec::zeek::json::JsonDecoder::skip_report(self).clone()
    }
}

impl BatchDecoder for crate::codec::arrow::ParquetDecoder {
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode(self, src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode_eof(self, src)
    }
}

impl BatchDecoder for crate::codec::arrow::ArrowIpcDecoder {
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode(self, src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        Decoder::decode_eof(self, src)
    }
}

/// The decoders of Zeek TSV, Zeek JSON lines, and the Parquet and Arrow files weir writes.
pub fn zeek_decoders() -> DecoderFactory {
    Arc::new(|format, options| match format {
        Format::ZeekJson => Box::new(crate::codec::zeek::json::JsonDecoder::new(options)),
        Format::Parquet => Box::new(crate::codec::arrow::ParquetDecoder::new(options)),
        Format::Arrow => Box::new(crate::codec::arrow::ArrowIpcDecoder::new(options)),
        Format::ZeekTsv | Format::Auto => {
            Box::new(crate::codec::zeek::tsv::TsvDecoder::new(options))
        }
    })
}

impl SourceConfig {
    /// Default byte capacity of each input's channel (the pipeline's edge capacity when that
    /// is smaller): enough to keep an input's decoder busy, while many inputs decoded ahead
    /// stay bounded.
    pub const DEFAULT_CHANNEL_CAPACITY: usize = 16 << 20;

    /// Zeek TSV/JSON with auto-detected compression and format, the given reader options,
    /// two inputs decoded ahead (at least), and `channel_capacity` bytes per input.
    pub fn zeek(reader: ReaderOptions, channel_capacity: usize) -> SourceConfig {
        SourceConfig {
            compression: Compression::Auto,
            format: Format::Auto,
            reader,
            decoders: zeek_decoders(),
            decode_ahead: std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            channel_capacity,
            parallel_tsv: std::thread::available_parallelism().map_or(2, |n| n.get()),
            follow: None,
        }
    }
}

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
//! On shutdown (the cancellation token), a decode thread stops reading, parses the complete
//! lines it already holds (a trailing partial line is dropped), and ends.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::BytesMut;
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

use super::channel;
use super::metrics::StageMetrics;
use crate::batch::Batch;
use crate::codec::zeek::parallel::ParallelTsvReader;
use crate::codec::ReaderOptions;
use crate::error::{ReadError, SkipReport};
use crate::source::{detect_format, open, Compression, Format, Input, SourceCounters};

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

struct Adapter(Box<dyn BatchDecoder>);

impl Decoder for Adapter {
    type Item = Batch;
    type Error = ReadError;
    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        self.0.decode(src)
    }
    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        self.0.decode_eof(src)
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
    /// Parser threads for one Zeek TSV input ([`ParallelTsvReader`]); 0 or 1 decodes on the
    /// input's own thread with [`SourceConfig::decoders`].
    pub parse_threads: usize,
    /// Byte capacity of each input's channel.
    pub channel_capacity: usize,
}

/// Everything the decode threads share.
#[derive(Clone)]
pub(crate) struct SourceShared {
    pub cancel: CancellationToken,
    pub counters: Arc<SourceCounters>,
    pub metrics: Arc<StageMetrics>,
    pub skips: Arc<Mutex<SkipReport>>,
    pub warnings: Arc<Mutex<Vec<String>>>,
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
        let (_, _, reader) = open(input, config.compression, &shared.counters)
            .await
            .map_err(|e| match e {
                crate::source::SourceError::Io { name, error } => io_error(&name, error),
                other => io_error(&name, io::Error::other(other.to_string())),
            })?;
        let (format, reader) = detect_format(reader, config.format)
            .await
            .map_err(|e| io_error(&name, e))?;
        let mut options = config.reader.clone();
        options.source_name = name.clone();
        if format == Format::ZeekTsv && config.parse_threads > 1 {
            let threads = config.parse_threads;
            return decode_tsv_parallel(reader, options, threads, &shared, &tx).await;
        }
        let decoder = (config.decoders)(format, options);
        let mut framed = FramedRead::with_capacity(reader, Adapter(decoder), 1 << 20);
        loop {
            let t0 = Instant::now();
            let next = tokio::select! {
                biased;
                _ = shared.cancel.cancelled() => None,
                item = framed.next() => Some(item),
            };
            shared.metrics.add_busy(t0.elapsed());
            let item = match next {
                Some(Some(item)) => item,
                Some(None) => break,
                None => {
                    // Shutdown: parse the complete lines already read, drop a partial one.
                    let mut buf = std::mem::take(framed.read_buffer_mut());
                    loop {
                        match framed.decoder_mut().decode(&mut buf) {
                            Ok(Some(b)) => send(&tx, &shared, Ok(b)).await?,
                            Ok(None) => break,
                            Err(e) => return Err(name_error(&name, e)),
                        }
                    }
                    break;
                }
            };
            let batch = item.map_err(|e| name_error(&name, e))?;
            let warnings = framed.decoder_mut().0.take_warnings();
            if !warnings.is_empty() {
                if let Ok(mut w) = shared.warnings.lock() {
                    w.extend(warnings.into_iter().map(|w| format!("{name}: {w}")));
                }
            }
            send(&tx, &shared, Ok(batch)).await?;
        }
        let report = framed.decoder().0.skip_report();
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

/// Decodes a Zeek TSV input on a pool of parser threads ([`ParallelTsvReader`]): the same
/// batches as the sequential decoder, several cores at work. This task feeds the pool with the
/// input's decompressed chunks and forwards the batches; on shutdown it stops feeding, so the
/// complete lines already read are decoded and a trailing partial line is dropped.
async fn decode_tsv_parallel(
    mut reader: crate::source::BoxReader,
    options: ReaderOptions,
    threads: usize,
    shared: &SourceShared,
    tx: &channel::Sender<Result<Batch, ReadError>>,
) -> Result<(), ReadError> {
    use tokio::io::AsyncReadExt;
    let name = options.source_name.clone();
    let (chunk_tx, mut chunk_rx) = tokio::sync::mpsc::channel::<io::Result<Vec<u8>>>(4);
    let (batch_tx, mut batch_rx) = tokio::sync::mpsc::channel::<Result<Batch, ReadError>>(8);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<(SkipReport, Vec<String>)>();
    let spawned = std::thread::Builder::new()
        .name(format!("weir-parse {name}"))
        .spawn(move || {
            let chunks = std::iter::from_fn(move || chunk_rx.blocking_recv());
            let mut parser = ParallelTsvReader::new(chunks, options, threads);
            for item in parser.by_ref() {
                if batch_tx.blocking_send(item).is_err() {
                    return;
                }
            }
            let _ = done_tx.send((parser.skip_report().clone(), parser.take_warnings()));
        });
    spawned.map_err(|e| io_error(&name, e))?;

    let cancel = shared.cancel.clone();
    let feed = async move {
        loop {
            let mut buf = Vec::with_capacity(1 << 20);
            let read = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(io::Error::new(io::ErrorKind::Interrupted, "shutdown")),
                r = reader.read_buf(&mut buf) => r,
            };
            let chunk = match read {
                Ok(0) => return,
                Ok(_) => Ok(buf),
                Err(e) => Err(e),
            };
            let last = chunk.is_err();
            if chunk_tx.send(chunk).await.is_err() || last {
                return;
            }
        }
    };
    let forward = async {
        while let Some(item) = batch_rx.recv().await {
            match item {
                Ok(b) => send(tx, shared, Ok(b)).await?,
                // The shutdown signal sent by `feed`: not an error.
                Err(ReadError::Io { error, .. }) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(name_error(&name, e)),
            }
        }
        Ok(())
    };
    let ((), result) = tokio::join!(feed, forward);
    result?;
    if let Ok((report, warnings)) = done_rx.await {
        if let Ok(mut s) = shared.skips.lock() {
            s.merge(&report);
        }
        if let Ok(mut w) = shared.warnings.lock() {
            w.extend(warnings.into_iter().map(|w| format!("{name}: {w}")));
        }
    }
    Ok(())
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
    // A closed channel means the pipeline is stopping: end quietly.
    let _ = r;
    Ok(())
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
                Ok(rt) => rt.block_on(decode_input(input, config, shared, tx)),
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

/// The decoders of Zeek TSV and Zeek JSON lines.
pub fn zeek_decoders() -> DecoderFactory {
    Arc::new(|format, options| match format {
        Format::ZeekJson => Box::new(crate::codec::zeek::json::JsonDecoder::new(options)),
        Format::ZeekTsv | Format::Auto => {
            Box::new(crate::codec::zeek::tsv::TsvDecoder::new(options))
        }
    })
}

impl SourceConfig {
    /// Zeek TSV/JSON with auto-detected compression and format, the given reader options,
    /// two inputs decoded ahead (at least), and `channel_capacity` bytes per input.
    pub fn zeek(reader: ReaderOptions, channel_capacity: usize) -> SourceConfig {
        SourceConfig {
            compression: Compression::Auto,
            format: Format::Auto,
            reader,
            decoders: zeek_decoders(),
            decode_ahead: std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
            parse_threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            channel_capacity,
        }
    }
}

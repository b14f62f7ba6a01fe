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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::BytesMut;
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use crate::batch::Batch;
use crate::channel;
use crate::checkpoint::RowSpan;
use crate::codec::zeek::conn_community_id::ConnCommunityId;
use crate::codec::zeek::parallel::ParallelTsvReader;
use crate::codec::ReaderOptions;
use crate::error::{ReadError, SkipReport};
use crate::metrics::StageMetrics;
use crate::source::resume::{plain_prelude, plan, BatchResume, Marker, Plan, Prelude};
use crate::source::textsum::TextSum;
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
    /// Checkpoints of the inputs read once (see [`crate::source::resume`]); `None`: none.
    pub resume: Option<Arc<BatchResume>>,
    /// Adds `community_id` to the `zeek.conn` batches that lack it, as they leave the
    /// decoder's thread ([`crate::codec::zeek::conn_community_id`]); `None`: batches as read.
    /// `weir import` and `weir run` set it from the source's `community_id` setting.
    pub community_id: Option<Arc<ConnCommunityId>>,
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
        let source_error = |e| match e {
            SourceError::Io { name, error } => io_error(&name, error),
            other => io_error(&name, io::Error::other(other)),
        };
        let mut tracked = match (&input, &config.resume) {
            (Input::Path(path), Some(resume)) => {
                plan(path, config.format, config.compression, resume)
                    .map_err(|e| io_error(&name, e))?
            }
            _ => Plan::Untracked,
        };
        // A tracked file read from a position: its prelude first (which may find that a
        // compressed file was rewritten since: then it is read whole).
        let mut opened_at = None;
        if let Plan::Read(file) = &mut tracked {
            if file.from.offset > 0 {
                match open_at(&input, file, &config, &shared).await? {
                    Some(opened) => opened_at = Some(opened),
                    None => file.rewritten(file.from.offset),
                }
            }
        }
        if let Plan::Read(file) = &tracked {
            if let Some(w) = &file.warning {
                tracing::warn!(input = %name, "{w}");
                warn(&shared, w.clone());
            }
        }
        let (size, reader, mut marker) = match (tracked, opened_at) {
            (Plan::Skip(line), _) => {
                tracing::info!(input = %name, "{line}");
                warn(&shared, line);
                return Ok(());
            }
            (Plan::Read(file), Some((size, reader, prelude, base))) => {
                let mut marker = Marker::new(file, prelude.len() as u64);
                let reader = sum_text(&mut marker, reader, base);
                let reader: BoxReader =
                    Box::pin(AsyncReadExt::chain(io::Cursor::new(prelude), reader));
                (size, reader, Some(marker))
            }
            (plan, _) => {
                let (_, size, reader) =
                    open(input, config.compression, &shared.counters, &shared.cancel)
                        .await
                        .map_err(source_error)?;
                match plan {
                    Plan::Read(file) => {
                        let mut marker = Marker::new(file, 0);
                        let reader = sum_text(&mut marker, reader, 0);
                        (size, reader, Some(marker))
                    }
                    _ => (size, reader, None),
                }
            }
        };
        let (format, reader) = detect_format(reader, config.format)
            .await
            .map_err(|e| io_error(&name, e))?;
        let mut options = config.reader.clone();
        options.source_name = name.clone();
        // JSON found by its first byte: EVE or Zeek, as its first line says.
        options.detect_eve |= config.format == Format::Auto && format == Format::ZeekJson;
        // Small inputs of known size are not worth a pool of threads.
        let small = size.is_some_and(|n| n < PARALLEL_MIN_SIZE);
        let cid = config.community_id.as_deref();
        let out = Out {
            tx: &tx,
            shared: &shared,
            cid,
        };
        // A plain file of lines read with checkpoints may still be written: its last line
        // without a newline waits for the next import (see `crate::source::resume`). Parquet
        // and Arrow are not lines: their last bytes are their footer.
        let lines = matches!(format, Format::ZeekTsv | Format::ZeekJson | Format::Suricata);
        let hold = lines && marker.as_ref().is_some_and(Marker::plain);
        let result = if format == Format::ZeekTsv && config.parallel_tsv > 1 && !small {
            decode_parallel_tsv(&name, reader, options, &config, out, &mut marker, hold).await
        } else {
            let max_partial = options.max_line_len.saturating_add(2);
            let decoder = (config.decoders)(format, options);
            decode_sequential(&name, reader, decoder, max_partial, out, &mut marker, hold).await
        };
        // Rows read before an error or a shutdown are sent, with their positions.
        let end = match result {
            Ok(end) => end,
            Err(e) => {
                if let Some(b) = marker.as_mut().and_then(Marker::flush) {
                    send(&tx, &shared, cid, Ok(b)).await?;
                }
                return Err(e);
            }
        };
        if let Some(m) = marker.as_mut() {
            let last = match end {
                Some((len, 0)) => {
                    tracing::info!(input = %m.name(), "read to its end");
                    Some(m.finish(len, true))
                }
                Some((len, held)) => {
                    let at = m.file_offset(len);
                    warn(
                        &shared,
                        format!(
                            "{}: the last line (byte {at}, {held} bytes so far) has no newline yet: left for a later import, which reads it once it is complete",
                            m.name()
                        ),
                    );
                    Some(m.finish(len, false))
                }
                None => m.flush(),
            };
            if let Some(b) = last {
                send(&tx, &shared, cid, Ok(b)).await?;
            }
        }
        Ok::<(), ReadError>(())
    }
    .await;
    if let Err(e) = result {
        let _ = tx.send(Err(e)).await;
    }
}

/// A tracked file's reader from its text offset `at` on, the text before which has the
/// CRC-32 `base`: a compressed file's checkpoints take their sums from the text read through
/// it (a plain file's read its bytes again).
fn sum_text(marker: &mut Marker, reader: BoxReader, base: u32) -> BoxReader {
    if marker.plain() {
        return reader;
    }
    let at = marker.file_offset(0);
    let (reader, sum) = TextSum::tee(reader, at, base);
    marker.sum_text(sum);
    reader
}

/// A tracked file opened at its position: its size, its decompressed bytes from the
/// position on, the prelude that stands for the text before it, and the CRC-32 of that text
/// (a compressed file's; 0 for a plain file, whose sums are read from the file).
type OpenedAt = (Option<u64>, BoxReader, Vec<u8>, u32);

/// Opens a tracked file to be read from `file.from.offset` (above 0); `None` when a
/// compressed file's text before the offset is not the one its checkpoint was taken of
/// (`file.check`): it was rewritten since (see [`crate::source::resume`]).
async fn open_at(
    input: &Input,
    file: &crate::source::resume::TrackedFile,
    config: &SourceConfig,
    shared: &SourceShared,
) -> Result<Option<OpenedAt>, ReadError> {
    let name = &file.path;
    let offset = file.from.offset;
    let Input::Path(path) = input else {
        return Err(io_error(name, io::Error::other("not a file")));
    };
    let headers = !file.json;
    if file.compression == Compression::None {
        let opened = std::fs::File::open(path)
            .and_then(|f| {
                let prelude = plain_prelude(&f, offset, headers)?;
                Ok((f, prelude))
            })
            .and_then(|(mut f, prelude)| {
                use std::io::Seek;
                f.seek(io::SeekFrom::Start(offset))?;
                Ok((f, prelude))
            });
        let (f, prelude) = opened.map_err(|e| io_error(name, e))?;
        let reader = crate::source::open::plain_file_reader(
            name.clone(),
            f,
            &shared.counters,
            &shared.cancel,
        );
        return Ok(Some((Some(file.len), reader, prelude, 0)));
    }
    let (_, size, mut reader) = open(
        Input::Path(path.clone()),
        config.compression,
        &shared.counters,
        &shared.cancel,
    )
    .await
    .map_err(|e| match e {
        SourceError::Io { name, error } => io_error(&name, error),
        other => io_error(name, io::Error::other(other)),
    })?;
    // The text before the offset is decompressed again, into the prelude.
    let mut prelude = Prelude::new(headers);
    let mut sum = crc32fast::Hasher::new();
    let mut buf = vec![0u8; crate::source::CHUNK_SIZE];
    let mut at = 0u64;
    while at < offset {
        let want = usize::try_from(offset - at).map_or(buf.len(), |n| n.min(buf.len()));
        let n = reader
            .read(&mut buf[..want])
            .await
            .map_err(|e| io_error(name, e))?;
        if n == 0 && file.check.is_some() {
            return Ok(None);
        }
        if n == 0 {
            return Err(io_error(
                name,
                io::Error::other(format!(
                    "the decompressed text ends at byte {at}, before the part of it already imported (byte {offset}): it is not the file imported before; `--again` imports it whole"
                )),
            ));
        }
        prelude.feed(&buf[..n]);
        sum.update(&buf[..n]);
        at += n as u64;
    }
    let sum = sum.finalize();
    if file.check.is_some_and(|want| want != sum) {
        return Ok(None);
    }
    Ok(Some((size, reader, prelude.finish(), sum)))
}

/// Bytes asked of the reader at once by the sequential decode loop.
const READ_SIZE: usize = 1 << 20;

/// Where a decode loop sends its batches.
#[derive(Clone, Copy)]
struct Out<'a> {
    tx: &'a channel::Sender<Result<Batch, ReadError>>,
    shared: &'a SourceShared,
    /// Adds `community_id` to conn batches (see [`SourceConfig::community_id`]).
    cid: Option<&'a ConnCommunityId>,
}

impl Out<'_> {
    /// Sends a decoded batch, through `marker` when the input is tracked.
    async fn batch(
        &self,
        marker: &mut Option<Marker>,
        batch: Batch,
        span: Option<RowSpan>,
    ) -> Result<(), ReadError> {
        let b = match marker {
            Some(m) => m.mark(batch, span),
            None => Some(batch),
        };
        match b {
            Some(b) => send(self.tx, self.shared, self.cid, Ok(b)).await,
            None => Ok(()),
        }
    }
}

/// Decodes an input with one decoder on this thread, in runs of whole lines (each read is cut
/// after its last newline; the rest waits for the next read), so that each run's last batch
/// ends at a known line start. Returns the length of the text decoded when it was read to its
/// end (`None` when shutdown cut it short), with the length of its last line when `hold` kept
/// that line back because it has no newline (0 otherwise).
async fn decode_sequential(
    name: &str,
    mut reader: BoxReader,
    mut decoder: Box<dyn BatchDecoder>,
    max_partial: usize,
    out: Out<'_>,
    marker: &mut Option<Marker>,
    hold: bool,
) -> Result<Option<(u64, u64)>, ReadError> {
    let shared = out.shared;
    let mut buf = BytesMut::with_capacity(READ_SIZE);
    // Text offset of buf[0], and the line start the rows are counted from.
    let mut at = 0u64;
    let mut line_start = 0u64;
    let mut rows = 0u64;
    let mut ended = true;
    let held;
    loop {
        if buf.capacity() - buf.len() < READ_SIZE / 4 {
            buf.reserve(READ_SIZE);
        }
        let t0 = Instant::now();
        let n = match reader.read_buf(&mut buf).await {
            Ok(n) => n,
            // Compressed input cut short by shutdown.
            Err(error) if shared.cancel.is_cancelled() => {
                warn(
                    shared,
                    format!("{name}: input ended early at shutdown: {error}"),
                );
                ended = false;
                0
            }
            Err(error) => return Err(io_error(name, error)),
        };
        let eof = n == 0;
        let stopped = eof && shared.cancel.is_cancelled();
        // A run of whole lines; at the end, the last line without its newline (unless
        // shutdown cut the input short: then it is dropped; or it is held back).
        let cut = if eof {
            if stopped || hold {
                memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1)
            } else {
                buf.len()
            }
        } else {
            match memchr::memrchr(b'\n', &buf[buf.len() - n..]) {
                Some(i) => buf.len() - n + i + 1,
                // Longer than any line may be: the decoder reports it (or skips it).
                None if buf.len() > max_partial => buf.len(),
                None => continue,
            }
        };
        let mut lines = buf.split_to(cut);
        let run_end = at + cut as u64;
        let whole = lines.last().is_none_or(|&b| b == b'\n') || (eof && !stopped);
        at = run_end;
        let mut decoded = Vec::new();
        let mut error = None;
        loop {
            let r = if eof && !stopped {
                decoder.decode_eof(&mut lines)
            } else {
                decoder.decode(&mut lines)
            };
            match r {
                Ok(Some(b)) => decoded.push(b),
                Ok(None) => break,
                Err(e) => {
                    error = Some(name_error(name, e));
                    break;
                }
            }
        }
        shared.metrics.add_busy(t0.elapsed());
        for w in decoder.take_warnings() {
            warn(shared, format!("{name}: {w}"));
        }
        let count = decoded.len();
        for (i, b) in decoded.into_iter().enumerate() {
            let last = i + 1 == count && error.is_none() && whole;
            let span = RowSpan {
                line_start,
                rows_before: rows,
                end: last.then_some(run_end),
            };
            rows += b.len() as u64;
            out.batch(marker, b, Some(span)).await?;
        }
        if let Some(e) = error {
            return Err(e);
        }
        if whole {
            line_start = run_end;
            rows = 0;
        }
        if eof {
            if stopped && !buf.is_empty() {
                warn(
                    shared,
                    format!(
                        "{name}: dropped a partial last line of {} bytes at shutdown",
                        buf.len()
                    ),
                );
            }
            ended &= !stopped;
            held = buf.len() as u64;
            break;
        }
    }
    if let Ok(mut s) = shared.skips.lock() {
        s.merge(&decoder.skip_report());
    }
    Ok(ended.then_some((at, held)))
}

/// Decodes a Zeek TSV input on several threads.
async fn decode_parallel_tsv(
    name: &str,
    reader: BoxReader,
    options: ReaderOptions,
    config: &SourceConfig,
    out: Out<'_>,
    marker: &mut Option<Marker>,
    hold: bool,
) -> Result<Option<(u64, u64)>, ReadError> {
    let shared = out.shared;
    let dropped = Arc::new(AtomicUsize::new(0));
    let held = Arc::new(AtomicU64::new(0));
    let text = Arc::new(AtomicU64::new(0));
    let mut ended = true;
    let chunks = ChunkIter {
        text: text.clone(),
        max_partial: options.max_line_len.saturating_add(2),
        reader,
        handle: shared.handle.clone(),
        stop: shared.cancel.clone(),
        tail: Vec::new(),
        done: false,
        dropped: dropped.clone(),
        hold: hold.then(|| held.clone()),
    };
    let mut par = ParallelTsvReader::new(chunks, options, config.parallel_tsv);
    loop {
        let t0 = Instant::now();
        // Blocking, but on this input's own thread.
        let item = par.next_span();
        shared.metrics.add_busy(t0.elapsed());
        let (batch, span) = match item {
            None => break,
            Some(Ok(b)) => b,
            Some(Err(ReadError::Io { error, .. })) if shared.cancel.is_cancelled() => {
                warn(
                    shared,
                    format!("{name}: input ended early at shutdown: {error}"),
                );
                ended = false;
                break;
            }
            Some(Err(e)) => return Err(name_error(name, e)),
        };
        for w in par.take_warnings() {
            warn(shared, format!("{name}: {w}"));
        }
        out.batch(marker, batch, span).await?;
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
    let ended = ended && dropped == 0 && !shared.cancel.is_cancelled();
    Ok(ended.then(|| (text.load(Ordering::Relaxed), held.load(Ordering::Relaxed))))
}

/// The decompressed bytes of an input as blocking chunks for [`ParallelTsvReader`]. Each
/// chunk ends at a line end (the partial last line is carried into the next chunk), so that
/// when shutdown cuts the input short, the partial line can be dropped rather than parsed.
/// A partial line longer than `max_partial` is handed over as it is (the reader refuses it as
/// overlong), so that input without newlines never piles up here.
struct ChunkIter {
    /// Bytes handed over so far.
    text: Arc<AtomicU64>,
    max_partial: usize,
    reader: BoxReader,
    handle: Option<tokio::runtime::Handle>,
    stop: CancellationToken,
    tail: Vec<u8>,
    done: bool,
    dropped: Arc<AtomicUsize>,
    /// Hold back a last line without a newline (not handed over); its length goes here.
    hold: Option<Arc<AtomicU64>>,
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
                if let Some(held) = &self.hold {
                    if buf.last() != Some(&b'\n') {
                        held.store(buf.len() as u64, Ordering::Relaxed);
                        return None;
                    }
                }
                self.text.fetch_add(buf.len() as u64, Ordering::Relaxed);
                return Some(Ok(buf));
            }
            match memchr::memrchr(b'\n', &buf[start..]) {
                Some(i) => {
                    self.tail = buf.split_off(start + i + 1);
                    self.text.fetch_add(buf.len() as u64, Ordering::Relaxed);
                    return Some(Ok(buf));
                }
                // Longer than any line may be: the reader reports it (or skips it).
                None if buf.len() > self.max_partial => {
                    self.text.fetch_add(buf.len() as u64, Ordering::Relaxed);
                    return Some(Ok(buf));
                }
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

/// Sends a batch (with its Community IDs, when `cid` computes them) or an error.
async fn send(
    tx: &channel::Sender<Result<Batch, ReadError>>,
    shared: &SourceShared,
    cid: Option<&ConnCommunityId>,
    item: Result<Batch, ReadError>,
) -> Result<(), ReadError> {
    if let Ok(b) = &item {
        // A batch without rows matters only for the checkpoints it carries.
        if b.is_empty() && b.marks().is_empty() {
            return Ok(());
        }
    }
    let item = match (item, cid) {
        // A reader's bug only (see `ConnCommunityId::apply`).
        (Ok(b), Some(cid)) => cid
            .apply(b)
            .map_err(|e| ReadError::from(io::Error::other(e))),
        (item, _) => item,
    };
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

/// The decoders of Zeek TSV, Zeek JSON lines, Suricata EVE JSON, and the Parquet and Arrow
/// files weir writes.
pub fn zeek_decoders() -> DecoderFactory {
    Arc::new(|format, options| match format {
        Format::ZeekJson => Box::new(crate::codec::zeek::json::JsonDecoder::new(options)),
        Format::Suricata => Box::new(crate::codec::zeek::json::JsonDecoder::eve(options)),
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
            resume: None,
            community_id: None,
        }
    }
}

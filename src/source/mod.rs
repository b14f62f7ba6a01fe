//! Byte sources: files (paths and glob patterns), stdin, and in-memory bytes or any
//! [`AsyncRead`], with decompression and input-format detection.
//!
//! ```text
//! Input ──open──> reader thread (1 MiB blocking reads) ──chunks──> counted AsyncRead
//!       ──auto/gzip/zstd/none──> decompressed AsyncRead ──detect {/#──> Format
//! ```
//!
//! Files and stdin are read by a dedicated OS thread each, with blocking reads of
//! [`CHUNK_SIZE`] bytes handed over a small bounded channel, so blocking file I/O never runs on
//! an async runtime worker and reading overlaps with decompression and parsing. The thread
//! stops when the reader side is dropped (stdin's thread may stay blocked in `read` until
//! more input arrives or the process exits; it holds nothing else).
//!
//! Decompression `auto` peeks the first four bytes without losing them: `1f 8b` is gzip,
//! `28 b5 2f fd` is zstd, anything else is read as is. Gzip input may hold several
//! concatenated members and zstd input several frames; both are read as one stream. A gzip
//! *file* is decompressed on its reader thread by [`ParallelGunzip`] (several members at
//! once); gzip on stdin and zstd stream through async-compression.
//!
//! Shutdown: once the `stop` token given to [`open`] is cancelled, a source reads no more
//! from its file or pipe, still delivers the chunks it already read, then ends; nothing read
//! is lost.
//!
//! Format `auto` peeks at the first byte that is not whitespace: `{` means Zeek JSON lines,
//! anything else (normally `#separator`) Zeek TSV.
//!
//! [`SourceCounters`] counts the bytes read from the underlying source (compressed) and,
//! where the size is known (regular files), the total, for progress display.

use std::fmt;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use async_compression::tokio::bufread::{GzipDecoder, ZstdDecoder};
use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, BufReader, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::io::StreamReader;
use tokio_util::sync::CancellationToken;

use inflate::ParallelGunzip;

pub mod decode;
pub mod inflate;

/// Size of one blocking read from a file or stdin.
pub const CHUNK_SIZE: usize = 1 << 20;

/// How many chunks a reader thread may read ahead of its consumer.
const CHUNKS_AHEAD: usize = 2;

/// Name used for standard input in messages.
pub const STDIN_NAME: &str = "<stdin>";

/// A boxed byte reader.
pub type BoxReader = Pin<Box<dyn AsyncRead + Send>>;

/// Where events come from.
pub enum Input {
    /// A file path.
    Path(PathBuf),
    /// Standard input.
    Stdin,
    /// Bytes in memory (for embedding and tests), with a name for messages.
    Bytes {
        /// Name for error messages.
        name: String,
        /// The content.
        data: Bytes,
    },
    /// Any async reader (for embedding), with a name for messages.
    Reader {
        /// Name for error messages.
        name: String,
        /// The reader.
        reader: BoxReader,
    },
}

impl Input {
    /// Bytes in memory under `name`.
    pub fn bytes(name: impl Into<String>, data: impl Into<Bytes>) -> Input {
        Input::Bytes {
            name: name.into(),
            data: data.into(),
        }
    }

    /// Any reader under `name`.
    pub fn reader(name: impl Into<String>, reader: impl AsyncRead + Send + 'static) -> Input {
        Input::Reader {
            name: name.into(),
            reader: Box::pin(reader),
        }
    }

    /// The name used in messages: the path, `<stdin>`, or the given name.
    pub fn name(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Stdin => STDIN_NAME.to_string(),
            Input::Bytes { name, .. } | Input::Reader { name, .. } => name.clone(),
        }
    }
}

impl fmt::Debug for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Path(p) => f.debug_tuple("Path").field(p).finish(),
            Input::Stdin => f.write_str("Stdin"),
            Input::Bytes { name, data } => f
                .debug_struct("Bytes")
                .field("name", name)
                .field("len", &data.len())
                .finish(),
            Input::Reader { name, .. } => f.debug_struct("Reader").field("name", name).finish(),
        }
    }
}

/// An error opening a source.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A glob pattern is malformed.
    #[error("bad glob pattern {pattern:?}: {message}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        message: String,
    },
    /// A glob pattern matched no file.
    #[error("no file matches {pattern:?}")]
    NoMatch {
        /// The pattern.
        pattern: String,
    },
    /// A file could not be opened or read.
    #[error("cannot read {name}: {error}")]
    Io {
        /// The source's name.
        name: String,
        /// The I/O error.
        #[source]
        error: io::Error,
    },
}

/// Whether an argument is a glob pattern rather than a plain path.
fn is_pattern(arg: &str) -> bool {
    arg.contains(['*', '?', '['])
}

/// Turns command-line arguments into inputs: `-` is stdin, a glob pattern expands to the
/// matching files in sorted order (an error when it matches none), anything else is a path.
/// No argument at all means stdin. Order is kept: `a.log 'b*.log' -` reads `a.log`, then the
/// matches of `b*.log` in order, then stdin.
pub fn expand_inputs<S: AsRef<str>>(args: &[S]) -> Result<Vec<Input>, SourceError> {
    if args.is_empty() {
        return Ok(vec![Input::Stdin]);
    }
    let mut out = Vec::new();
    for arg in args {
        let arg = arg.as_ref();
        if arg == "-" {
            out.push(Input::Stdin);
        } else if is_pattern(arg) && !Path::new(arg).exists() {
            let paths = glob::glob(arg).map_err(|e| SourceError::Pattern {
                pattern: arg.to_string(),
                message: e.msg.to_string(),
            })?;
            let mut matched: Vec<PathBuf> = Vec::new();
            for p in paths {
                let p = p.map_err(|e| SourceError::Io {
                    name: e.path().display().to_string(),
                    error: io::Error::new(e.error().kind(), e.error().to_string()),
                })?;
                if !p.is_dir() {
                    matched.push(p);
                }
            }
            if matched.is_empty() {
                return Err(SourceError::NoMatch {
                    pattern: arg.to_string(),
                });
            }
            matched.sort();
            out.extend(matched.into_iter().map(Input::Path));
        } else {
            out.push(Input::Path(PathBuf::from(arg)));
        }
    }
    Ok(out)
}

/// How a source is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Decide by the magic bytes (the default).
    #[default]
    Auto,
    /// gzip, possibly several concatenated members.
    Gzip,
    /// zstd, possibly several frames.
    Zstd,
    /// Not compressed.
    None,
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Compression, String> {
        match s {
            "auto" => Ok(Compression::Auto),
            "gzip" | "gz" => Ok(Compression::Gzip),
            "zstd" | "zst" => Ok(Compression::Zstd),
            "none" => Ok(Compression::None),
            _ => Err(format!(
                "unknown compression {s:?}: expected auto, gzip, zstd or none"
            )),
        }
    }
}

impl Compression {
    /// The compression that the first bytes of a stream announce.
    pub fn detect(prefix: &[u8]) -> Compression {
        if prefix.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// The event format of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Decide by the first byte that is not whitespace (the default).
    #[default]
    Auto,
    /// Zeek's TSV (ASCII writer) format.
    ZeekTsv,
    /// Zeek's JSON lines.
    ZeekJson,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s {
            "auto" => Ok(Format::Auto),
            "zeek-tsv" => Ok(Format::ZeekTsv),
            "zeek-json" => Ok(Format::ZeekJson),
            _ => Err(format!(
                "unknown input format {s:?}: expected auto, zeek-tsv or zeek-json"
            )),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Auto => "auto",
            Format::ZeekTsv => "zeek-tsv",
            Format::ZeekJson => "zeek-json",
        })
    }
}

impl Format {
    /// The format that the first non-whitespace byte announces (`None`: empty input).
    pub fn detect(first: Option<u8>) -> Format {
        match first {
            Some(b'{') => Format::ZeekJson,
            _ => Format::ZeekTsv,
        }
    }
}

/// Byte counts of sources, for progress and metrics. Shared by every source of a stage.
#[derive(Debug, Default)]
pub struct SourceCounters {
    read: AtomicU64,
    decoded: AtomicU64,
    total: AtomicU64,
    unknown_total: AtomicU64,
}

impl SourceCounters {
    /// Bytes read from the underlying sources (compressed, as stored).
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Bytes after decompression.
    pub fn bytes_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Total size of the sources opened so far, when all of them have a known size (files);
    /// `None` once a source of unknown size (stdin, a reader) was opened.
    pub fn total(&self) -> Option<u64> {
        (self.unknown_total.load(Ordering::Relaxed) == 0)
            .then(|| self.total.load(Ordering::Relaxed))
    }

    /// Adds to the known total size of the inputs (called by whoever knows the sizes up front,
    /// e.g. the CLI with file metadata, so that percent covers all files from the start).
    pub fn add_total(&self, bytes: u64) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Records a source whose size cannot be known.
    pub fn add_unknown_total(&self) {
        self.unknown_total.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sum of the sizes of the inputs that are files; `None` if any input has no known size.
pub fn total_size(inputs: &[Input]) -> Option<u64> {
    let mut total = 0u64;
    for i in inputs {
        match i {
            Input::Path(p) => total += std::fs::metadata(p).ok()?.len(),
            Input::Bytes { data, .. } => total += data.len() as u64,
            Input::Stdin | Input::Reader { .. } => return None,
        }
    }
    Some(total)
}

/// Counts the bytes passing through a reader into an atomic counter.
struct Counted<R> {
    inner: R,
    counter: Arc<SourceCounters>,
    decoded: bool,
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            let c = if self.decoded {
                &self.counter.decoded
            } else {
                &self.counter.read
            };
            c.fetch_add(n, Ordering::Relaxed);
        }
        r
    }
}

/// Starts a thread reading a regular file in whole chunks (read straight into fresh buffers,
/// without zeroing them first); returns the async side.
fn spawn_file_reader(name: String, file: std::fs::File, stop: &CancellationToken) -> BoxReader {
    use std::io::Read;
    let mut file = file;
    spawn_chunks(name, stop, move || {
        let mut buf = Vec::with_capacity(CHUNK_SIZE);
        (&mut file).take(CHUNK_SIZE as u64).read_to_end(&mut buf)?;
        Ok((!buf.is_empty()).then(|| Bytes::from(buf)))
    })
}

/// Starts a thread reading `read` (a pipe, stdin) in chunks, handing over what is there as
/// soon as a read returns little, so that a slow live source flows; returns the async side.
fn spawn_reader<R: io::Read + Send + 'static>(
    name: String,
    mut read: R,
    stop: &CancellationToken,
) -> BoxReader {
    spawn_chunks(name, stop, move || {
        let mut buf = vec![0u8; CHUNK_SIZE];
        let mut filled = 0;
        // Fill the chunk unless the source is slow (a pipe): hand over what is there then.
        loop {
            match read.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    if filled == buf.len() || n < 64 << 10 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        buf.truncate(filled);
        Ok((filled > 0).then(|| Bytes::from(buf)))
    })
}

/// Starts a thread calling `next` for chunks until it returns `None` or an error, handing
/// them over a small bounded channel; returns the async side.
fn spawn_chunks<F>(name: String, stop: &CancellationToken, mut next: F) -> BoxReader
where
    F: FnMut() -> io::Result<Option<Bytes>> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(CHUNKS_AHEAD);
    let spawned = std::thread::Builder::new()
        .name(format!("weir-read {name}"))
        .spawn(move || loop {
            match next() {
                Ok(None) => return,
                Ok(Some(chunk)) => {
                    if tx.blocking_send(Ok(chunk)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Box::pin(StreamReader::new(chunk_stream(rx, stop.clone()))),
        Err(e) => Box::pin(FailedReader(Some(e))),
    }
}

/// Decompresses a gzip file with [`ParallelGunzip`] on a reader thread, counting compressed
/// bytes as read.
fn spawn_parallel_gunzip(
    name: String,
    file: std::fs::File,
    counters: Arc<SourceCounters>,
    stop: &CancellationToken,
) -> BoxReader {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // Count compressed bytes as they are read from the file (whatever way the members are
    // then decoded).
    let counted = CountedRead {
        inner: file,
        counters,
    };
    let mut gz = ParallelGunzip::new(io::BufReader::with_capacity(CHUNK_SIZE, counted), threads);
    spawn_chunks(name, stop, move || {
        let pool = gz.pool();
        Ok(gz
            .next()
            .transpose()?
            .map(|buf| Bytes::from_owner(Recycled { buf, pool })))
    })
}

/// A decoded chunk that goes back to its [`BufferPool`] when the last `Bytes` of it is dropped.
struct Recycled {
    buf: Vec<u8>,
    pool: inflate::BufferPool,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.buf));
    }
}

/// Counts the bytes read from a blocking reader as read from the source.
struct CountedRead<R> {
    inner: R,
    counters: Arc<SourceCounters>,
}

impl<R: io::Read> io::Read for CountedRead<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counters.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A reader that fails once with the given error (a thread could not be started).
struct FailedReader(Option<io::Error>);

impl AsyncRead for FailedReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Ready(match self.0.take() {
            Some(e) => Err(e),
            None => Ok(()),
        })
    }
}

/// The chunks of a reader thread. Once `stop` is cancelled the channel is closed: the reader
/// thread reads no more, the chunks it already read are still delivered, then the stream ends.
fn chunk_stream(
    mut rx: mpsc::Receiver<io::Result<Bytes>>,
    stop: CancellationToken,
) -> impl futures::Stream<Item = io::Result<Bytes>> + Send {
    let mut stopped = Box::pin(stop.cancelled_owned());
    let mut closed = false;
    futures::stream::poll_fn(move |cx| {
        if !closed && stopped.as_mut().poll(cx).is_ready() {
            rx.close();
            closed = true;
        }
        rx.poll_recv(cx)
    })
}

/// A reader that ends (reads nothing more) once `stop` is cancelled.
struct StopReader {
    inner: BoxReader,
    stopped: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
}

impl AsyncRead for StopReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.stopped.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        self.inner.as_mut().poll_read(cx, buf)
    }
}

/// An opened source: raw bytes (still compressed), with its name and size when known.
pub struct RawSource {
    /// Name for messages.
    pub name: String,
    /// Size in bytes, when known (files, in-memory bytes).
    pub size: Option<u64>,
    /// The bytes as stored.
    pub reader: BoxReader,
    /// Whether `reader` already yields decompressed bytes (a gzip file decoded in parallel).
    pub decompressed: bool,
}

/// Opens an input for reading (a file is opened here, so that a missing file is reported
/// at once). Bytes read are counted into `counters`. A regular gzip file (under
/// [`Compression::Auto`] or [`Compression::Gzip`]) is decompressed right away by
/// [`ParallelGunzip`], several members at once.
///
/// Once `stop` is cancelled the source reads no more: what was already read is still
/// delivered, then the input ends (graceful shutdown; nothing read is lost).
pub fn open_raw(
    input: Input,
    compression: Compression,
    counters: &Arc<SourceCounters>,
    stop: &CancellationToken,
) -> Result<RawSource, SourceError> {
    let name = input.name();
    let io_err = |error| SourceError::Io {
        name: name.clone(),
        error,
    };
    let (size, reader): (Option<u64>, BoxReader) = match input {
        Input::Path(path) => {
            let mut file = std::fs::File::open(&path).map_err(io_err)?;
            let meta = file.metadata().map_err(io_err)?;
            if meta.is_dir() {
                return Err(io_err(io::Error::other("is a directory")));
            }
            let size = meta.is_file().then_some(meta.len());
            if size.is_some() && matches!(compression, Compression::Auto | Compression::Gzip) {
                use std::io::{Read, Seek};
                let mut magic = [0u8; 2];
                let n = file.read(&mut magic).map_err(io_err)?;
                file.seek(io::SeekFrom::Start(0)).map_err(io_err)?;
                if n == 2 && magic == [0x1f, 0x8b] {
                    let reader = spawn_parallel_gunzip(name.clone(), file, counters.clone(), stop);
                    return Ok(RawSource {
                        name,
                        size,
                        decompressed: true,
                        reader: Box::pin(Counted {
                            inner: reader,
                            counter: counters.clone(),
                            decoded: true,
                        }),
                    });
                }
            }
            if size.is_some() {
                (size, spawn_file_reader(name.clone(), file, stop))
            } else {
                // A FIFO or device: read like a pipe.
                (size, spawn_reader(name.clone(), file, stop))
            }
        }
        Input::Stdin => (None, spawn_reader(name.clone(), io::stdin(), stop)),
        Input::Bytes { data, .. } => (Some(data.len() as u64), Box::pin(io::Cursor::new(data))),
        Input::Reader { reader, .. } => (
            None,
            Box::pin(StopReader {
                inner: reader,
                stopped: Box::pin(stop.clone().cancelled_owned()),
            }),
        ),
    };
    let reader: BoxReader = Box::pin(Counted {
        inner: reader,
        counter: counters.clone(),
        decoded: false,
    });
    Ok(RawSource {
        name,
        size,
        reader,
        decompressed: false,
    })
}

/// Opens, decompresses and counts an input: the name, the size when known, and the
/// decompressed bytes. See [`open_raw`] for `stop`.
pub async fn open(
    input: Input,
    compression: Compression,
    counters: &Arc<SourceCounters>,
    stop: &CancellationToken,
) -> Result<(String, Option<u64>, BoxReader), SourceError> {
    let raw = open_raw(input, compression, counters, stop)?;
    if raw.size.is_none() {
        counters.add_unknown_total();
    }
    if raw.decompressed {
        return Ok((raw.name, raw.size, raw.reader));
    }
    let name = raw.name;
    let (_, reader) = decompress(raw.reader, compression, counters)
        .await
        .map_err(|error| SourceError::Io {
            name: name.clone(),
            error,
        })?;
    Ok((name, raw.size, reader))
}

/// Reads up to `n` bytes (fewer only at end of input), stopping early once `done` says so;
/// returns them and a reader that yields them again followed by the rest.
async fn peek(
    mut reader: BoxReader,
    n: usize,
    done: impl Fn(&[u8]) -> bool,
) -> io::Result<(Vec<u8>, BoxReader)> {
    let mut prefix = Vec::with_capacity(n.min(4096));
    let mut buf = [0u8; 4096];
    while prefix.len() < n && !done(&prefix) {
        let want = (n - prefix.len()).min(buf.len());
        let got = reader.read(&mut buf[..want]).await?;
        if got == 0 {
            break;
        }
        prefix.extend_from_slice(&buf[..got]);
    }
    let again: BoxReader = Box::pin(io::Cursor::new(prefix.clone()).chain(reader));
    Ok((prefix, again))
}

/// Undoes the compression of `reader` (detected by magic bytes under [`Compression::Auto`]);
/// returns the compression found and the decompressed bytes, counted as decoded bytes.
pub async fn decompress(
    reader: BoxReader,
    compression: Compression,
    counters: &Arc<SourceCounters>,
) -> io::Result<(Compression, BoxReader)> {
    let (found, reader) = match compression {
        Compression::Auto => {
            let (prefix, reader) = peek(reader, 4, |p| {
                !p.is_empty() && p[0] != 0x1f && p[0] != 0x28
                    || p.len() >= 2 && p[..2] == [0x1f, 0x8b]
            })
            .await?;
            (Compression::detect(&prefix), reader)
        }
        c => (c, reader),
    };
    let out: BoxReader = match found {
        Compression::Gzip => {
            let mut d = GzipDecoder::new(BufReader::with_capacity(256 << 10, reader));
            d.multiple_members(true);
            Box::pin(d)
        }
        Compression::Zstd => {
            let mut d = ZstdDecoder::new(BufReader::with_capacity(256 << 10, reader));
            d.multiple_members(true);
            Box::pin(d)
        }
        Compression::None | Compression::Auto => reader,
    };
    Ok((
        found,
        Box::pin(Counted {
            inner: out,
            counter: counters.clone(),
            decoded: true,
        }),
    ))
}

/// Decides the format of decompressed input under [`Format::Auto`] by its first byte that is
/// not whitespace (peeking up to 64 KiB of leading whitespace); other formats pass through.
pub async fn detect_format(reader: BoxReader, format: Format) -> io::Result<(Format, BoxReader)> {
    if format != Format::Auto {
        return Ok((format, reader));
    }
    let first = |p: &[u8]| p.iter().copied().find(|b| !b.is_ascii_whitespace());
    let (prefix, reader) = peek(reader, 64 << 10, |p| first(p).is_some()).await?;
    Ok((Format::detect(first(&prefix)), reader))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes() {
        assert_eq!(Compression::detect(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
        assert_eq!(
            Compression::detect(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(Compression::detect(b"#sep"), Compression::None);
        assert_eq!(Compression::detect(&[0x1f]), Compression::None);
        assert_eq!(Format::detect(Some(b'{')), Format::ZeekJson);
        assert_eq!(Format::detect(Some(b'#')), Format::ZeekTsv);
        assert_eq!(Format::detect(None), Format::ZeekTsv);
    }

    #[test]
    fn parse_names() {
        assert_eq!("zeek-json".parse::<Format>(), Ok(Format::ZeekJson));
        assert!("csv".parse::<Format>().is_err());
        assert_eq!("gzip".parse::<Compression>(), Ok(Compression::Gzip));
    }
}

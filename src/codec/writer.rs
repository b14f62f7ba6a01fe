//! Writers: turning msgpack rows back into text.
//!
//! An [`EventWriter`] formats rows of one schema at a time into a caller-owned `Vec<u8>`. It
//! takes rows as raw msgpack byte slices (see [`crate::value`]) rather than a [`Batch`], so that
//! rows read straight out of a memory-mapped segment are formatted without being copied into a
//! batch first. Writers keep state between calls (the Zeek TSV writer remembers the schema of its
//! open header block) and write a trailer on [`EventWriter::finish`].
//!
//! Two formats exist ([`OutputFormat`]):
//! - `zeek-tsv`: the layout of Zeek's ASCII writer ([`crate::codec::zeek::tsv_writer`]);
//! - `json`: JSON lines as Zeek writes them with `LogAscii::use_json=T`
//!   ([`crate::codec::json_writer`]).
//!
//! [`WriterSink`] is the asynchronous end of a pipeline: a [`futures::Sink`] of batches that
//! formats them with an [`EventWriter`] and writes the text to any [`AsyncWrite`] in large
//! chunks.
//!
//! # Broken pipes
//! When the output is closed early (`weir convert ... | head`), the write fails with
//! [`std::io::ErrorKind::BrokenPipe`]. [`WriterSink`] reports this as [`WriteError::Closed`], a
//! variant of its own, so that a pipeline stops reading input and the command exits with status 0
//! (see [`WriteError::is_closed`]); every other I/O error is [`WriteError::Io`].

use std::fmt;
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures::Sink;
use tokio::io::AsyncWrite;

use crate::batch::Batch;
use crate::setting::{Choice, ChoiceName};
use crate::types::SchemaRef;
use crate::value::DecodeError;

/// An output format of `weir convert --to` and the exporters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputFormat {
    /// Zeek TSV (`zeek-tsv`): the layout of Zeek's ASCII writer.
    ZeekTsv,
    /// JSON lines (`json`) following Zeek's JSON logs.
    Json,
}

impl Choice for OutputFormat {
    const WHAT: &'static str = "output format";
    const CHOICES: &'static [ChoiceName<OutputFormat>] = &[
        ChoiceName::new(
            "zeek-tsv",
            OutputFormat::ZeekTsv,
            "Zeek TSV, as Zeek writes it",
        ),
        ChoiceName::new(
            "json",
            OutputFormat::Json,
            "JSON lines, as Zeek writes them",
        ),
    ];
}

crate::choice!(OutputFormat);

/// Why rows could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A row did not decode as its schema says (a corrupt segment or a schema mismatch).
    #[error("cannot format row {row} of schema {schema}: {source}")]
    Decode {
        /// The schema's name, e.g. `zeek.conn`.
        schema: String,
        /// 0-based index of the row among the rows given to the call (the row index in its batch).
        row: usize,
        /// What was wrong with the row.
        #[source]
        source: DecodeError,
    },
    /// The output could not be written.
    #[error("cannot write output: {0}")]
    Io(#[source] io::Error),
    /// The reader of the output went away (broken pipe): a clean end, not a failure.
    #[error("output closed by its reader")]
    Closed,
}

/// Whether an error is, or is caused by, the reader of our output going away (a broken pipe,
/// as with `| head`), after which a command exits with status 0.
pub fn is_output_closed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<WriteError>()
            .is_some_and(WriteError::is_closed)
            || err
                .downcast_ref::<io::Error>()
                .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

impl WriteError {
    /// Whether this is the clean end of an output closed early ([`WriteError::Closed`]), after
    /// which a command exits with status 0.
    pub fn is_closed(&self) -> bool {
        matches!(self, WriteError::Closed)
    }

    /// Classifies an I/O error: a broken pipe is [`WriteError::Closed`].
    pub fn from_io(e: io::Error) -> WriteError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            WriteError::Closed
        } else {
            WriteError::Io(e)
        }
    }
}

/// Formats rows of events as text.
pub trait EventWriter: Send {
    /// Appends the rows (msgpack rows of `schema`, see [`crate::value`]) to `out`.
    ///
    /// On error, `out` keeps the rows written before the bad one, and nothing of the bad one.
    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError>;

    /// Appends the rows of a batch to `out`.
    fn write_batch(&mut self, batch: &Batch, out: &mut Vec<u8>) -> Result<(), WriteError> {
        let mut rows = batch.rows();
        self.write_rows(batch.schema(), &mut rows, out)
    }

    /// Appends the trailer, if the format has one (`#close` for Zeek TSV), and resets the writer
    /// so that the next rows start a new document.
    fn finish(&mut self, out: &mut Vec<u8>);
}

/// Writes each row with `write`, keeping the output all-or-nothing per row: on a bad row the
/// output holds the rows before it and nothing of the bad one, and the error names the schema
/// and the row index. The shared loop of every [`EventWriter::write_rows`].
pub(crate) fn write_each<'a>(
    schema: &SchemaRef,
    rows: impl Iterator<Item = &'a [u8]>,
    out: &mut Vec<u8>,
    mut write: impl FnMut(&'a [u8], &mut Vec<u8>) -> Result<(), crate::value::DecodeError>,
) -> Result<(), WriteError> {
    for (i, row) in rows.enumerate() {
        let start = out.len();
        if let Err(source) = write(row, out) {
            out.truncate(start);
            return Err(WriteError::Decode {
                schema: schema.name.clone(),
                row: i,
                source,
            });
        }
    }
    Ok(())
}

/// A writer for the given format with default settings.
pub fn writer_for(format: OutputFormat) -> Box<dyn EventWriter> {
    match format {
        OutputFormat::ZeekTsv => Box::new(crate::codec::zeek::tsv_writer::ZeekTsvWriter::new()),
        OutputFormat::Json => Box::new(crate::codec::json_writer::JsonWriter::new()),
    }
}

/// A [`Sink`] of batches that formats them with an [`EventWriter`] and writes the text to an
/// [`AsyncWrite`] (stdout, a file).
///
/// Text is collected in memory and written once at least
/// [`WriterSink::DEFAULT_CHUNK`] bytes are pending (backpressure: `poll_ready` is pending while
/// such a chunk is being written). `poll_flush` writes everything; `poll_close` writes the
/// writer's trailer ([`EventWriter::finish`]), flushes and shuts the output down. A broken pipe is
/// reported as [`WriteError::Closed`].
pub struct WriterSink<W> {
    writer: Box<dyn EventWriter>,
    io: W,
    buf: Vec<u8>,
    pos: usize,
    chunk: usize,
    finished: bool,
}

impl<W> fmt::Debug for WriterSink<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterSink")
            .field("pending", &(self.buf.len() - self.pos))
            .field("chunk", &self.chunk)
            .field("finished", &self.finished)
            .finish()
    }
}

impl<W: AsyncWrite + Unpin> WriterSink<W> {
    /// Pending bytes at which the sink writes: 256 KiB.
    pub const DEFAULT_CHUNK: usize = 256 << 10;

    /// A sink formatting with `writer` into `io`.
    pub fn new(writer: Box<dyn EventWriter>, io: W) -> WriterSink<W> {
        WriterSink::with_chunk(writer, io, Self::DEFAULT_CHUNK)
    }

    /// A sink that writes whenever `chunk` bytes (at least 1) are pending.
    pub fn with_chunk(writer: Box<dyn EventWriter>, io: W, chunk: usize) -> WriterSink<W> {
        WriterSink {
            writer,
            io,
            buf: Vec::with_capacity(chunk.clamp(1, Self::DEFAULT_CHUNK * 2)),
            pos: 0,
            chunk: chunk.max(1),
            finished: false,
        }
    }

    /// The output, e.g. to inspect a `Vec<u8>` after closing.
    pub fn into_inner(self) -> W {
        self.io
    }

    /// Writes all pending text.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        while self.pos < self.buf.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.buf[self.pos..]))
                .map_err(WriteError::from_io)?;
            if n == 0 {
                return Poll::Ready(Err(WriteError::Io(io::ErrorKind::WriteZero.into())));
            }
            self.pos += n;
        }
        self.buf.clear();
        self.pos = 0;
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> Sink<Batch> for WriterSink<W> {
    type Error = WriteError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        if this.buf.len() - this.pos >= this.chunk {
            ready!(this.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, batch: Batch) -> Result<(), WriteError> {
        let this = self.get_mut();
        this.finished = false;
        this.writer.write_batch(&batch, &mut this.buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io)
            .poll_flush(cx)
            .map_err(WriteError::from_io)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        let this = self.get_mut();
        if !this.finished {
            this.finished = true;
            this.writer.finish(&mut this.buf);
        }
        ready!(this.poll_drain(cx))?;
        ready!(Pin::new(&mut this.io).poll_flush(cx)).map_err(WriteError::from_io)?;
        Pin::new(&mut this.io)
            .poll_shutdown(cx)
            .map_err(WriteError::from_io)
    }
}

// ---------------------------------------------------------------------------------------------
// Number and time formatting shared by the writers (and the civil calendar shared with the JSON
// reader). Everything appends to a Vec<u8> without allocating.

const NS_PER_SEC: u64 = 1_000_000_000;

/// Appends an integer.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends a signed integer.
#[inline]
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends the 9 digits of a nanosecond fraction, dropping trailing zeros below 6 digits
/// (microseconds, as Zeek prints): `486539000` -> `486539`, `486539120` -> `48653912`.
#[inline]
fn push_fraction(out: &mut Vec<u8>, frac: u32) {
    let mut digits = [b'0'; 9];
    let mut f = frac;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (f % 10) as u8;
        f /= 10;
    }
    let mut len = 9;
    while len > 6 && digits[len - 1] == b'0' {
        len -= 1;
    }
    out.extend_from_slice(&digits[..len]);
}

/// Appends nanoseconds as exact decimal seconds with at least 6 fraction digits, as Zeek
/// prints `time` and `interval`: `1258531221486539000` -> `1258531221.486539`,
/// `-1500000000` -> `-1.500000`, `1` -> `0.000000001`.
#[inline]
pub(crate) fn push_decimal_ns(out: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        out.push(b'-');
    }
    let abs = ns.unsigned_abs();
    push_u64(out, abs / NS_PER_SEC);
    out.push(b'.');
    push_fraction(out, (abs % NS_PER_SEC) as u32);
}

/// Appends a double so that it re-reads to the identical `f64`: the shortest round-trip digits
/// without exponent, `.0` after integral values (as Zeek), `inf`, `-inf` and `nan`.
/// Returns `false` (and writes nothing) for non-finite values when `finite_only` is set.
#[inline]
pub(crate) fn push_double(out: &mut Vec<u8>, v: f64, finite_only: bool) -> bool {
    if !v.is_finite() {
        if finite_only {
            return false;
        }
        out.extend_from_slice(if v.is_nan() {
            b"nan"
        } else if v > 0.0 {
            b"inf"
        } else {
            b"-inf"
        });
        return true;
    }
    let start = out.len();
    // Display of f64 is the shortest text that parses back to the same value, never exponential.
    let _ = write!(out, "{v}");
    if !out[start..].contains(&b'.') {
        out.extend_from_slice(b".0");
    }
    true
}

/// Appends an IPv4 address in dotted-quad form.
#[inline]
fn push_ipv4(out: &mut Vec<u8>, a: Ipv4Addr) {
    let mut b = itoa::Buffer::new();
    for (i, o) in a.octets().iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        out.extend_from_slice(b.format(*o).as_bytes());
    }
}

/// Appends an address as Zeek prints it (IPv6 in RFC 5952 compressed form).
#[inline]
pub(crate) fn push_addr(out: &mut Vec<u8>, a: IpAddr) {
    match a {
        IpAddr::V4(a) => push_ipv4(out, a),
        IpAddr::V6(a) => {
            let _ = write!(out, "{a}");
        }
    }
}

/// Appends a subnet as `addr/prefix`.
#[inline]
pub(crate) fn push_subnet(out: &mut Vec<u8>, a: IpAddr, prefix: u8) {
    push_addr(out, a);
    out.push(b'/');
    push_u64(out, prefix as u64);
}

/// The civil date (year, month 1-12, day 1-31) of a day number (days since 1970-01-01), by
/// Howard Hinnant's `civil_from_days`.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The day number (days since 1970-01-01) of a civil date, by Howard Hinnant's
/// `days_from_civil`. The date must be valid.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

fn push_2(out: &mut Vec<u8>, v: u32) {
    out.push(b'0' + (v / 10 % 10) as u8);
    out.push(b'0' + (v % 10) as u8);
}

/// Splits nanoseconds since the epoch into (date, seconds of the day, nanosecond fraction).
fn split_time(ns: i64) -> ((i64, u32, u32), u32, u32) {
    let secs = ns.div_euclid(NS_PER_SEC as i64);
    let frac = ns.rem_euclid(NS_PER_SEC as i64) as u32;
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    (civil_from_days(days), sod, frac)
}

fn push_date(out: &mut Vec<u8>, (y, m, d): (i64, u32, u32)) {
    if (0..10_000).contains(&y) {
        let y = y as u32;
        push_2(out, y / 100);
        push_2(out, y % 100);
    } else {
        // Outside RFC 3339's range; i64 nanoseconds never get here (years 1677 to 2262).
        push_i64(out, y);
    }
    out.push(b'-');
    push_2(out, m);
    out.push(b'-');
    push_2(out, d);
}

/// Appends a time as RFC 3339 UTC with at least 6 fraction digits:
/// `2009-11-18T08:00:21.486539Z`.
pub(crate) fn push_rfc3339(out: &mut Vec<u8>, ns: i64) {
    let (date, sod, frac) = split_time(ns);
    push_date(out, date);
    out.push(b'T');
    push_2(out, sod / 3600);
    out.push(b':');
    push_2(out, sod / 60 % 60);
    out.push(b':');
    push_2(out, sod % 60);
    out.push(b'.');
    push_fraction(out, frac);
    out.push(b'Z');
}

/// Appends a time as Zeek's `#open`/`#close` stamp, `YYYY-MM-DD-HH-MM-SS` (UTC).
pub(crate) fn push_zeek_stamp(out: &mut Vec<u8>, ns: i64) {
    let (date, sod, _) = split_time(ns);
    push_date(out, date);
    for v in [sod / 3600, sod / 60 % 60, sod % 60] {
        out.push(b'-');
        push_2(out, v);
    }
}

/// Now, in nanoseconds since the epoch (0 if the clock is before 1970).
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Reads the msgpack values of a row (see [`crate::value`]) for formatting, without building
/// [`crate::value::ValueRef`]s: the writers' fast path. Accepts exactly what
/// [`crate::value::RowCursor`] accepts and reports the same [`DecodeError`]s.
pub(crate) struct Msg<'a> {
    data: &'a [u8],
    pos: usize,
}

/// The msgpack `nil` marker (an unset value).
pub(crate) const NIL: u8 = 0xc0;

impl<'a> Msg<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Msg<'a> {
        Msg { data, pos: 0 }
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(DecodeError::Truncated(self.pos))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    #[inline]
    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Reads the next marker byte.
    #[inline]
    pub(crate) fn marker(&mut self) -> Result<u8, DecodeError> {
        match self.data.get(self.pos) {
            Some(&m) => {
                self.pos += 1;
                Ok(m)
            }
            None => Err(DecodeError::Truncated(self.pos)),
        }
    }

    /// The error for marker `m` (just read) where type `ty` was expected.
    #[cold]
    pub(crate) fn unexpected(&self, m: u8, ty: &crate::types::Type) -> DecodeError {
        DecodeError::Unexpected {
            marker: m,
            ty: ty.to_string(),
            at: self.pos.saturating_sub(1),
        }
    }

    /// Reads the row's array header and checks its length.
    pub(crate) fn row_header(&mut self, fields: usize) -> Result<(), DecodeError> {
        let m = self.marker()?;
        let got = match self.array_len(m)? {
            Some(n) => n,
            None => {
                return Err(DecodeError::Unexpected {
                    marker: m,
                    ty: "array".into(),
                    at: self.pos - 1,
                })
            }
        };
        if got != fields {
            return Err(DecodeError::FieldCount { got, want: fields });
        }
        Ok(())
    }

    /// The length of the array whose marker `m` was just read; `None` if `m` is no array.
    #[inline]
    pub(crate) fn array_len(&mut self, m: u8) -> Result<Option<usize>, DecodeError> {
        Ok(Some(match m {
            0x90..=0x9f => (m & 0x0f) as usize,
            0xdc => u16::from_be_bytes(self.be()?) as usize,
            0xdd => u32::from_be_bytes(self.be()?) as usize,
            _ => return Ok(None),
        }))
    }

    #[inline]
    fn integer(&mut self, m: u8, ty: &crate::types::Type) -> Result<i128, DecodeError> {
        Ok(match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => m as i8 as i128,
            0xcc => self.take(1)?[0] as i128,
            0xcd => u16::from_be_bytes(self.be()?) as i128,
            0xce => u32::from_be_bytes(self.be()?) as i128,
            0xcf => u64::from_be_bytes(self.be()?) as i128,
            0xd0 => self.take(1)?[0] as i8 as i128,
            0xd1 => i16::from_be_bytes(self.be()?) as i128,
            0xd2 => i32::from_be_bytes(self.be()?) as i128,
            0xd3 => i64::from_be_bytes(self.be()?) as i128,
            _ => return Err(self.unexpected(m, ty)),
        })
    }

    /// An unsigned integer (`count`, `port`).
    #[inline]
    pub(crate) fn uint(&mut self, m: u8, ty: &crate::types::Type) -> Result<u64, DecodeError> {
        if m < 0x80 {
            return Ok(m as u64);
        }
        let v = self.integer(m, ty)?;
        u64::try_from(v).map_err(|_| self.unexpected(m, ty))
    }

    /// A signed integer (`int`, `time`, `interval`).
    #[inline]
    pub(crate) fn int(&mut self, m: u8, ty: &crate::types::Type) -> Result<i64, DecodeError> {
        if m < 0x80 {
            return Ok(m as i64);
        }
        let v = self.integer(m, ty)?;
        i64::try_from(v).map_err(|_| self.unexpected(m, ty))
    }

    /// A float 64 (or float 32).
    #[inline]
    pub(crate) fn double(&mut self, m: u8, ty: &crate::types::Type) -> Result<f64, DecodeError> {
        match m {
            0xcb => Ok(f64::from_bits(u64::from_be_bytes(self.be()?))),
            0xca => Ok(f32::from_bits(u32::from_be_bytes(self.be()?)) as f64),
            _ => Err(self.unexpected(m, ty)),
        }
    }

    /// A bool.
    #[inline]
    pub(crate) fn bool(&self, m: u8, ty: &crate::types::Type) -> Result<bool, DecodeError> {
        match m {
            0xc2 => Ok(false),
            0xc3 => Ok(true),
            _ => Err(self.unexpected(m, ty)),
        }
    }

    /// A byte string.
    #[inline]
    pub(crate) fn bin(&mut self, m: u8, ty: &crate::types::Type) -> Result<&'a [u8], DecodeError> {
        let len = match m {
            0xc4 => self.take(1)?[0] as usize,
            0xc5 => u16::from_be_bytes(self.be()?) as usize,
            0xc6 => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.unexpected(m, ty)),
        };
        self.take(len)
    }

    /// An address: a bin of 4 or 16 bytes.
    #[inline]
    pub(crate) fn addr(&mut self, m: u8, ty: &crate::types::Type) -> Result<IpAddr, DecodeError> {
        let b = self.bin(m, ty)?;
        if let Ok(o) = <[u8; 4]>::try_from(b) {
            Ok(IpAddr::from(o))
        } else if let Ok(o) = <[u8; 16]>::try_from(b) {
            Ok(IpAddr::from(o))
        } else {
            Err(self.unexpected(m, ty))
        }
    }

    /// A subnet: `[addr, prefix]`.
    pub(crate) fn subnet(
        &mut self,
        m: u8,
        ty: &crate::types::Type,
    ) -> Result<(IpAddr, u8), DecodeError> {
        if m != 0x92 {
            return Err(self.unexpected(m, ty));
        }
        let am = self.marker()?;
        let a = self.addr(am, ty)?;
        let pm = self.marker()?;
        let p = self.integer(pm, ty)?;
        let p = u8::try_from(p).map_err(|_| self.unexpected(pm, ty))?;
        Ok((a, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn decimal_ns_is_exact_with_six_digits_minimum() {
        let cases: &[(i64, &str)] = &[
            (1_258_531_221_486_539_000, "1258531221.486539"),
            (1_258_531_221_486_539_123, "1258531221.486539123"),
            (1_258_531_221_486_539_120, "1258531221.48653912"),
            (0, "0.000000"),
            (1, "0.000000001"),
            (-1, "-0.000000001"),
            (-1_500_000_000, "-1.500000"),
            (i64::MIN, "-9223372036.854775808"),
            (i64::MAX, "9223372036.854775807"),
        ];
        for &(ns, want) in cases {
            assert_eq!(s(|o| push_decimal_ns(o, ns)), want, "{ns}");
        }
    }

    #[test]
    fn doubles_round_trip_and_look_like_zeek() {
        for (v, want) in [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e21, "1000000000000000000000.0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (5e-324, &format!("{}", 5e-324)),
        ] {
            let text = s(|o| {
                push_double(o, v, false);
            });
            assert_eq!(text, want);
            let back: f64 = text.parse().unwrap();
            assert!(back.to_bits() == v.to_bits() || (v.is_nan() && back.is_nan()));
        }
        let mut o = Vec::new();
        assert!(!push_double(&mut o, f64::NAN, true));
        assert!(o.is_empty());
    }

    #[test]
    fn civil_conversion_round_trips_over_the_i64_range() {
        for days in (-106_752..=106_752).step_by(7) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn rfc3339_and_stamps() {
        assert_eq!(
            s(|o| push_rfc3339(o, 1_258_531_221_486_539_000)),
            "2009-11-18T08:00:21.486539Z"
        );
        assert_eq!(s(|o| push_rfc3339(o, -1)), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            s(|o| push_rfc3339(o, i64::MIN)),
            "1677-09-21T00:12:43.145224192Z"
        );
        assert_eq!(
            s(|o| push_zeek_stamp(o, 1_400_868_124_000_000_000)),
            "2014-05-23-18-02-04"
        );
    }

    #[test]
    fn addresses() {
        assert_eq!(
            s(|o| push_addr(o, "192.168.1.102".parse().unwrap())),
            "192.168.1.102"
        );
        assert_eq!(
            s(|o| push_subnet(o, "2001:db8::".parse().unwrap(), 32)),
            "2001:db8::/32"
        );
    }

    #[test]
    fn truncated_or_mistyped_rows_are_errors_in_both_writers() {
        use crate::types::{Field, Schema, Type};
        use crate::value::{encode_row, Value};
        let types = [
            "bool",
            "count",
            "int",
            "double",
            "time",
            "string",
            "addr",
            "subnet",
            "port",
            "set[addr]",
            "vector[double]",
        ];
        let schema = Schema::new(
            "zeek.t",
            types
                .iter()
                .enumerate()
                .map(|(i, t)| Field::new(format!("f{i}"), Type::parse(t).unwrap()))
                .collect(),
        )
        .into_shared();
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let row = [
            Value::Bool(true),
            Value::Count(1 << 40),
            Value::Int(-300),
            Value::Double(0.5),
            Value::Time(-1),
            Value::String(b"s".to_vec()),
            Value::Addr(a),
            Value::Subnet(a, 64),
            Value::Port(80),
            Value::List(vec![Value::Addr(a), Value::Null]),
            Value::List(vec![Value::Double(1.0)]),
        ];
        let mut buf = Vec::new();
        encode_row(&row, &mut buf);
        for format in [OutputFormat::ZeekTsv, OutputFormat::Json] {
            let mut out = Vec::new();
            writer_for(format)
                .write_rows(&schema, &mut std::iter::once(&buf[..]), &mut out)
                .unwrap();
            for cut in 0..buf.len() {
                let r = writer_for(format).write_rows(
                    &schema,
                    &mut std::iter::once(&buf[..cut]),
                    &mut out,
                );
                assert!(matches!(r, Err(WriteError::Decode { row: 0, .. })), "{cut}");
            }
            // A row of another schema.
            let other = Schema::new("zeek.o", vec![Field::new("n", Type::Count); 11]).into_shared();
            let r = writer_for(format).write_rows(&other, &mut std::iter::once(&buf[..]), &mut out);
            assert!(matches!(r, Err(WriteError::Decode { .. })));
        }
    }

    #[test]
    fn output_format_parses_and_prints() {
        for f in [OutputFormat::ZeekTsv, OutputFormat::Json] {
            assert_eq!(f.to_string().parse::<OutputFormat>().unwrap(), f);
        }
        assert!("csv".parse::<OutputFormat>().is_err());
    }
}

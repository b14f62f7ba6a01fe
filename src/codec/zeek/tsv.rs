//! The Zeek TSV reader: a synchronous push decoder from Zeek's ASCII log format to [`Batch`]es.
//!
//! # Format
//!
//! A Zeek TSV log is a header block of `#` lines followed by data lines, one event per line:
//!
//! ```text
//! #separator \x09
//! #set_separator→,
//! #empty_field→(empty)
//! #unset_field→-
//! #path→conn
//! #open→2014-05-23-18-02-04
//! #fields→ts→uid→id.orig_h→...
//! #types→time→string→addr→...
//! 1258531221.486539→Pii6cUUq1v4→192.168.1.102→...
//! #close→2014-05-23-18-02-05
//! ```
//!
//! (`→` stands for the separator, a tab here.)
//!
//! - `#separator` is followed by a space (or tab) and the separator written as `\xHH` escapes
//!   (`\x09`, as Zeek writes it by default), literal characters (`||`, as Zeek writes a
//!   printable separator a script sets), or both; `x09` (escapes that lost their backslashes)
//!   and a backslash that starts no escape are errors at that line. Every other header line
//!   uses the declared separator between key and value. Separators may be several bytes long. `#set_separator`, `#empty_field` and `#unset_field` values may use
//!   `\xHH` escapes too. Unknown `#` lines are comments.
//! - Header lines come in no fixed order, but `#fields` and `#types` must precede data. A header
//!   block after data (concatenated logs) updates the header; the schema (`zeek.<#path>`, or
//!   `zeek.unknown` without `#path`) is rebuilt at the next data line. An unknown type name is
//!   read as `string`, with one warning per new schema ([`TsvDecoder::take_warnings`]). An equal schema reuses the same [`SchemaRef`] `Arc`, so
//!   consumers can compare schemas with [`Arc::ptr_eq`]. `#close` ends a document: the header
//!   resets to its defaults and data must be preceded by a new header. A `#fields` line that
//!   names a field twice is an error at that line naming the field (its events could not be
//!   written as JSON objects and read back).
//! - A value equal to the unset marker (`-`) is null. A value equal to the empty marker
//!   (`(empty)`) is an empty container, or an empty string for string-like types. Containers
//!   split on the set separator; an element equal to the unset marker is a null element.
//!   `\\` is one backslash, `\xHH` a raw byte, any other backslash is literal.
//! - `time` and `interval` are decimal seconds, converted exactly to integer nanoseconds
//!   (digits beyond the ninth decimal round half to even). Lines end with `\n` or `\r\n`; the
//!   last line may lack its newline; empty lines are skipped.
//!
//! # Emission contract
//!
//! [`TsvDecoder`]'s [`Decoder::decode`](tokio_util::codec::Decoder::decode) consumes complete
//! lines and returns a batch when it reaches [`ReaderOptions::batch_rows`] rows, when the schema
//! changes (a data line with a new schema, or `#close`), or when no complete line is left and
//! rows are pending. It returns `None` when no complete line is left and nothing is pending.
//! `decode_eof` also takes a last line without newline, then flushes. The sequence of rows and schemas is the same
//! whatever the chunking of the input; only the batch boundaries may differ.
//!
//! # Errors
//!
//! Bad input is a [`ParseError`] naming the source, the 1-based line, the field and the quoted
//! text. Under [`OnError::Skip`] the line is dropped and recorded in the [`SkipReport`]. Under
//! [`OnError::Fail`] rows decoded before the bad line are emitted first, then the error. A line
//! longer than [`ReaderOptions::max_line_len`] is an error as soon as its partial length
//! exceeds the limit, so memory stays bounded; in skip mode its bytes are discarded up to the
//! next newline.
//!
//! # Speed
//!
//! With a one-byte separator, data lines take a fast path that parses each field while finding
//! its end (digits, IPv4 and plain strings in one pass, times eight digits at a time) and writes
//! it straight into the batch with [`RowEncoder`]. Anything unusual (escapes, subnets,
//! errors) rejects the line, leaving no trace, and the general
//! path splits it and produces the value or the error; both give the same result for valid
//! input. No allocation happens per line or field.

use std::sync::Arc;

use bytes::{Buf, BytesMut};
use memchr::memchr;
use memchr::memmem::Finder;

use crate::batch::{Batch, BatchBuilder, ColumnStats};
use crate::codec::zeek::scalar::{
    parse_addr, parse_bool, parse_f64, parse_i64, parse_ns, parse_ns_prefix, parse_subnet,
    parse_u64, parse_u64_prefix, parse_v4_prefix,
};
use crate::codec::ReaderOptions;
use crate::error::{quote, OnError, ParseError, ReadError, SkipReport};
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::RowEncoder;

/// How many distinct schemas the decoder remembers for `Arc` reuse.
const SCHEMA_CACHE: usize = 64;

/// Header state declared by `#` lines.
#[derive(Debug, Clone)]
struct Header {
    sep: Vec<u8>,
    set_sep: Vec<u8>,
    empty: Vec<u8>,
    unset: Vec<u8>,
    path: Option<String>,
    /// Field names and the line that declared them.
    fields: Option<(Vec<String>, u64)>,
    /// Type names and the line that declared them.
    types: Option<(Vec<String>, u64)>,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            sep: b"\t".to_vec(),
            set_sep: b",".to_vec(),
            empty: b"(empty)".to_vec(),
            unset: b"-".to_vec(),
            path: None,
            fields: None,
            types: None,
        }
    }
}

/// Largest port number: a `port` value above it is invalid.
const MAX_PORT: u64 = 65535;

/// A scalar kind, as parsed (ports are counts up to [`MAX_PORT`], string-like types are strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    Count,
    /// A count of at most [`MAX_PORT`].
    Port,
    Int,
    Double,
    Time,
    Str,
    Addr,
    Subnet,
}

impl Kind {
    fn of(ty: &Type) -> Kind {
        match ty {
            Type::Bool => Kind::Bool,
            Type::Count => Kind::Count,
            Type::Port => Kind::Port,
            Type::Int => Kind::Int,
            Type::Double => Kind::Double,
            Type::Time | Type::Interval => Kind::Time,
            Type::Addr => Kind::Addr,
            Type::Subnet => Kind::Subnet,
            _ => Kind::Str,
        }
    }
}

/// How one column is parsed.
#[derive(Debug, Clone, Copy)]
enum Col {
    One(Kind),
    /// The schema's `ts` field (a `time`), tracked for the batch's time range.
    Ts,
    List(Kind),
}

/// Splits on a one-byte or longer separator.
#[derive(Debug, Clone)]
enum Splitter {
    Byte(u8),
    Bytes(Box<Finder<'static>>),
}

impl Splitter {
    fn new(sep: &[u8]) -> Splitter {
        match sep {
            [b] => Splitter::Byte(*b),
            _ => Splitter::Bytes(Box::new(Finder::new(sep).into_owned())),
        }
    }

    fn width(&self) -> usize {
        match self {
            Splitter::Byte(_) => 1,
            Splitter::Bytes(f) => f.needle().len(),
        }
    }

    /// Pushes the `(start, end)` of every piece of `s` into `out`; returns whether `s` holds a
    /// backslash (so that values without one skip unescaping).
    #[inline]
    fn split(&self, s: &[u8], out: &mut Vec<(usize, usize)>) -> bool {
        match self {
            Splitter::Byte(b) => split_byte(*b, s, out),
            Splitter::Bytes(f) => {
                let mut start = 0;
                let w = f.needle().len();
                for i in f.find_iter(s) {
                    // Overlapping matches (e.g. separator `aa` in `aaa`) are not separators.
                    if i >= start {
                        out.push((start, i));
                        start = i + w;
                    }
                }
                out.push((start, s.len()));
                memchr(b'\\', s).is_some()
            }
        }
    }

    /// The first piece and the rest after the first separator, if any.
    fn split_once<'s>(&self, s: &'s [u8]) -> Option<(&'s [u8], &'s [u8])> {
        let i = match self {
            Splitter::Byte(b) => memchr(*b, s)?,
            Splitter::Bytes(f) => f.find(s)?,
        };
        Some((&s[..i], &s[i + self.width()..]))
    }
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// `0x80` in every byte of `x` that is zero, `0` elsewhere (exact: no borrow between bytes).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    !(((x & HI7).wrapping_add(HI7)) | x | HI7)
}

/// Splits on one byte, eight bytes at a time (SWAR), and looks for backslashes on the way.
#[inline]
fn split_byte(sep: u8, s: &[u8], out: &mut Vec<(usize, usize)>) -> bool {
    let sep_word = LO * sep as u64;
    let bs_word = LO * b'\\' as u64;
    let mut start = 0;
    let mut backslash = 0u64;
    let mut base = 0;
    let mut rest = s;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        let w = u64::from_le_bytes(*word);
        backslash |= zero_bytes(w ^ bs_word);
        let mut m = zero_bytes(w ^ sep_word);
        while m != 0 {
            let p = base + (m.trailing_zeros() / 8) as usize;
            out.push((start, p));
            start = p + 1;
            m &= m - 1;
        }
        base += 8;
        rest = tail;
    }
    for (j, &c) in rest.iter().enumerate() {
        if c == sep {
            out.push((start, base + j));
            start = base + j + 1;
        }
        backslash |= (c == b'\\') as u64;
    }
    out.push((start, s.len()));
    backslash != 0
}

/// A marker value (`-`, `(empty)`), compared cheaply.
#[derive(Debug, Clone)]
struct Marker(Vec<u8>);

impl Marker {
    #[inline(always)]
    fn is(&self, s: &[u8]) -> bool {
        match self.0.as_slice() {
            [m] => s.len() == 1 && s[0] == *m,
            m => s.len() == m.len() && s.first() == m.first() && s == m,
        }
    }
}

/// Everything needed to parse data lines of one schema.
#[derive(Debug, Clone)]
struct Plan {
    schema: SchemaRef,
    cols: Vec<Col>,
    /// The unset marker when it is one byte (the fast path needs that).
    unset_byte: Option<u8>,
    sep: Splitter,
    set_sep: Splitter,
    empty: Marker,
    unset: Marker,
}

/// What handling one line asks of the driver loop.
enum Step {
    /// The line is consumed.
    Done,
    /// The line is consumed and pending rows must be emitted (`#close`).
    Flush,
    /// The line starts a new schema: emit pending rows first, then see the line again.
    Defer,
}

/// Why a data line did not parse (converted to a [`ParseError`] by the caller).
enum RowError {
    Columns(usize),
    Value(usize),
}

/// Zeek TSV push decoder; see the [module documentation](self) for format and contract.
///
/// ```
/// use weir::unstable::codec::zeek::tsv::read_all;
/// use weir::unstable::codec::ReaderOptions;
///
/// let log = b"#fields\tts\tn\n#types\ttime\tcount\n1.5\t7\n";
/// let (batches, skipped) = read_all(log, ReaderOptions::new("example")).unwrap();
/// assert_eq!(batches[0].len(), 1);
/// assert_eq!(skipped.skipped, 0);
/// ```
#[derive(Debug)]
pub struct TsvDecoder {
    opts: ReaderOptions,
    hdr: Header,
    /// Whether a header line changed something since the plan was built.
    dirty: bool,
    plan: Option<Plan>,
    builder: Option<BatchBuilder>,
    /// Lines consumed so far.
    line_no: u64,
    /// Bytes of the partial line at the buffer start already searched for a newline.
    scanned: usize,
    /// Skip mode: dropping the rest of an overlong line.
    discarding: bool,
    /// Fail mode: an error to return after the rows before it were emitted.
    pending_err: Option<ParseError>,
    failed: bool,
    skips: SkipReport,
    warnings: Vec<String>,
    schemas: Vec<SchemaRef>,
    bounds: Vec<(usize, usize)>,
    elems: Vec<(usize, usize)>,
    scratch: Vec<u8>,
    /// Bytes and rows to reserve in a new batch (see [`TsvDecoder::expect`]).
    expected: (usize, usize),
    /// Rows at which the first batch is cut, when not `batch_rows` (see
    /// [`TsvDecoder::first_batch`]); 0 once that batch is out.
    first_cut: usize,
}

impl TsvDecoder {
    /// A decoder with the given options.
    pub fn new(opts: ReaderOptions) -> TsvDecoder {
        TsvDecoder {
            opts,
            hdr: Header::default(),
            dirty: true,
            plan: None,
            builder: None,
            line_no: 0,
            scanned: 0,
            discarding: false,
            pending_err: None,
            failed: false,
            skips: SkipReport::default(),
            warnings: Vec::new(),
            schemas: Vec::new(),
            bounds: Vec::new(),
            elems: Vec::new(),
            scratch: Vec::new(),
            expected: (0, 0),
            first_cut: 0,
        }
    }

    /// Rows dropped so far under [`OnError::Skip`].
    pub fn skip_report(&self) -> &SkipReport {
        &self.skips
    }

    /// Takes the warnings collected so far (one per unknown type name of each new schema, read
    /// as string). The library never prints them.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Lines consumed so far.
    pub fn lines(&self) -> u64 {
        self.line_no
    }

    /// Decodes from `buf`; `eof` means no more input follows, so a last line without newline
    /// is complete. Returns how many bytes were consumed and the outcome.
    /// Decodes from `buf` as [`Decoder::decode_eof`] (with `eof`) or [`Decoder::decode`] would,
    /// without needing a `BytesMut`: returns how many bytes were consumed and the outcome.
    pub(crate) fn run(
        &mut self,
        buf: &[u8],
        eof: bool,
    ) -> (usize, Result<Option<Batch>, ParseError>) {
        if let Some(e) = self.pending_err.take() {
            self.failed = true;
            return (0, Err(e));
        }
        if self.failed {
            return (buf.len(), Ok(None));
        }
        let max = self.opts.max_line_len;
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            if self.discarding {
                match memchr(b'\n', rest) {
                    Some(i) => {
                        pos += i + 1;
                        self.discarding = false;
                        self.scanned = 0;
                        continue;
                    }
                    None => {
                        pos = buf.len();
                        self.discarding &= !eof;
                        break;
                    }
                }
            }
            if self.scanned == 0 {
                // Fast loop over consecutive plain data lines of the current schema; anything
                // else (and any line it does not accept) goes the general way below.
                let batch_rows = self.batch_limit();
                if let (false, Some(plan), Some(b)) = (self.dirty, &self.plan, &mut self.builder) {
                    if let (true, Splitter::Byte(sep)) =
                        (Arc::ptr_eq(b.schema(), &plan.schema), &plan.sep)
                    {
                        let stats = self.opts.column_stats;
                        while let Some(nl) = memchr(b'\n', &buf[pos..]) {
                            let mut line = &buf[pos..pos + nl];
                            if let [head @ .., b'\r'] = line {
                                line = head;
                            }
                            if line.len() > max
                                || matches!(line.first(), None | Some(b'#'))
                                || !encode_line_fast(plan, *sep, line, b, stats)
                            {
                                break;
                            }
                            self.line_no += 1;
                            pos += nl + 1;
                            if b.len() >= batch_rows {
                                let batch = b.finish();
                                return (pos, Ok(Some(self.out(batch))));
                            }
                        }
                    }
                }
            }
            let rest = &buf[pos..];
            let from = self.scanned.min(rest.len());
            let found = memchr(b'\n', &rest[from..]);
            let (line_len, used) = match found {
                Some(i) => (from + i, from + i + 1),
                None if rest.is_empty() => break,
                None if eof => (rest.len(), rest.len()),
                None => {
                    if rest.len() > max.saturating_add(1) {
                        let ln = self.line_no + 1;
                        let e = self.overlong(ln, rest);
                        self.line_no = ln;
                        self.scanned = 0;
                        pos = buf.len();
                        match self.opts.on_error {
                            OnError::Skip => {
                                self.skips.record(e);
                                self.discarding = true;
                                break;
                            }
                            OnError::Fail => return self.fail(pos, e),
                        }
                    }
                    self.scanned = rest.len();
                    break;
                }
            };
            self.scanned = 0;
            let mut line = &rest[..line_len];
            if let [head @ .., b'\r'] = line {
                line = head;
            }
            let ln = self.line_no + 1;
            let step = if line.len() > max {
                Err(self.overlong(ln, line))
            } else {
                self.line(line, ln)
            };
            match step {
                Ok(Step::Defer) => {
                    // Only returned when rows of the old schema are pending.
                    return (pos, Ok(self.take_pending()));
                }
                Ok(Step::Done) => {
                    self.line_no = ln;
                    pos += used;
                    let limit = self.batch_limit();
                    if self.builder.as_ref().is_some_and(|b| b.len() >= limit) {
                        return (pos, Ok(self.take_pending()));
                    }
                }
                Ok(Step::Flush) => {
                    self.line_no = ln;
                    pos += used;
                    if let Some(b) = self.take_pending() {
                        return (pos, Ok(Some(b)));
                    }
                }
                Err(e) => {
                    self.line_no = ln;
                    pos += used;
                    match self.opts.on_error {
                        OnError::Skip => self.skips.record(e),
                        OnError::Fail => return self.fail(pos, e),
                    }
                }
            }
        }
        (pos, Ok(self.take_pending()))
    }

    /// Fail mode: emits pending rows first and keeps the error for the next call.
    fn fail(&mut self, pos: usize, e: ParseError) -> (usize, Result<Option<Batch>, ParseError>) {
        match self.take_pending() {
            Some(b) => {
                self.pending_err = Some(e);
                (pos, Ok(Some(b)))
            }
            None => {
                self.failed = true;
                (pos, Err(e))
            }
        }
    }

    fn take_pending(&mut self) -> Option<Batch> {
        let batch = self
            .builder
            .as_mut()
            .filter(|b| !b.is_empty())
            .map(BatchBuilder::finish)?;
        Some(self.out(batch))
    }

    /// A batch on its way out. The first one cut short ([`TsvDecoder::first_batch`]) is
    /// shrunk to its rows: it was given room for a whole batch, and it waits in channels
    /// that count its bytes, not its room (an import of W1000 peaked 40 MB higher).
    fn out(&mut self, mut batch: Batch) -> Batch {
        if self.first_cut > 0 {
            self.first_cut = 0;
            batch.shrink_to_fit();
        }
        batch
    }

    /// Rows at which the batch being filled is cut.
    fn batch_limit(&self) -> usize {
        match self.first_cut {
            0 => self.opts.batch_rows.max(1),
            n => n,
        }
    }

    fn err(&self, line: u64, field: Option<&str>, message: String) -> ParseError {
        ParseError {
            source_name: self.opts.source_name.clone(),
            line,
            field: field.map(str::to_owned),
            message,
        }
    }

    fn overlong(&self, line: u64, text: &[u8]) -> ParseError {
        let max = self.opts.max_line_len;
        let shown = &text[..text.len().min(max.saturating_add(1))];
        self.err(
            line,
            None,
            format!(
                "line longer than the maximum of {max} bytes: {}",
                quote(shown)
            ),
        )
    }

    /// Handles one complete line (without its line end).
    fn line(&mut self, line: &[u8], ln: u64) -> Result<Step, ParseError> {
        match line.first() {
            None => return Ok(Step::Done),
            Some(b'#') => return self.header_line(line, ln),
            Some(_) => {}
        }
        if self.dirty {
            self.plan = None;
            let plan = self.build_plan(ln, line)?;
            self.plan = Some(plan);
            self.dirty = false;
        }
        let TsvDecoder {
            plan,
            builder,
            bounds,
            elems,
            scratch,
            expected,
            ..
        } = self;
        let Some(plan) = plan.as_ref() else {
            return Err(self.no_header(ln, line));
        };
        let b = match builder {
            Some(b) if Arc::ptr_eq(b.schema(), &plan.schema) => b,
            Some(b) if !b.is_empty() => return Ok(Step::Defer),
            _ => builder.insert({
                let b = BatchBuilder::with_capacity(plan.schema.clone(), expected.0, expected.1);
                if self.opts.columns {
                    b.columnar()
                } else {
                    b
                }
            }),
        };
        if let Splitter::Byte(sep) = plan.sep {
            if encode_line_fast(plan, sep, line, b, self.opts.column_stats) {
                return Ok(Step::Done);
            }
        }
        match encode_line(plan, line, bounds, elems, scratch, b) {
            Ok(()) => Ok(Step::Done),
            Err(RowError::Columns(n)) => {
                let want = plan.cols.len();
                Err(self.err(
                    ln,
                    None,
                    format!("expected {want} columns, found {n}: {}", quote(line)),
                ))
            }
            Err(RowError::Value(i)) => {
                let (s, e) = self.bounds[i];
                let Some(plan) = self.plan.as_ref() else {
                    return Err(self.no_header(ln, line));
                };
                let f = &plan.schema.fields[i];
                let msg = format!("invalid {} value {}", f.ty, quote(&line[s..e]));
                Err(self.err(ln, Some(&f.name), msg))
            }
        }
    }

    fn no_header(&self, ln: u64, line: &[u8]) -> ParseError {
        self.err(
            ln,
            None,
            format!("data before any #fields/#types header: {}", quote(line)),
        )
    }

    /// Builds the plan for the current header, reusing an equal cached schema.
    fn build_plan(&mut self, ln: u64, line: &[u8]) -> Result<Plan, ParseError> {
        let (Some((fields, fl)), Some((types, tl))) = (&self.hdr.fields, &self.hdr.types) else {
            return Err(self.no_header(ln, line));
        };
        if fields.len() != types.len() {
            return Err(self.err(
                (*fl).max(*tl),
                None,
                format!(
                    "#fields names {} columns but #types names {}",
                    fields.len(),
                    types.len()
                ),
            ));
        }
        // A name twice would make events whose JSON has a key twice (refused on re-import).
        for (j, name) in fields.iter().enumerate() {
            if let Some(i) = fields[..j].iter().position(|n| n == name) {
                let m = format!(
                    "#fields names this field twice (columns {} and {})",
                    i + 1,
                    j + 1
                );
                return Err(self.err(*fl, Some(name), m));
            }
        }
        if self.hdr.set_sep.is_empty() || self.hdr.sep.is_empty() {
            return Err(self.err(ln, None, "empty separator in the header".into()));
        }
        let mut unknown = Vec::new();
        let fs: Vec<Field> = fields
            .iter()
            .zip(types)
            .map(|(name, tn)| {
                let ty = Type::parse(tn).unwrap_or_else(|| {
                    unknown.push((name.clone(), tn.clone()));
                    Type::String
                });
                Field::new(name.clone(), ty)
            })
            .collect();
        let path = self.hdr.path.as_deref().unwrap_or("unknown");
        let schema = Schema::new(format!("zeek.{path}"), fs);
        let schema = match self.schemas.iter().find(|s| ***s == schema) {
            Some(s) => s.clone(),
            None => {
                for (name, tn) in unknown {
                    let w = format!(
                        "{}:{}: unknown type {tn:?} of field {name} in log {path}: read as string",
                        self.opts.source_name, tl
                    );
                    self.warnings.push(w);
                }
                if self.schemas.len() >= SCHEMA_CACHE {
                    self.schemas.remove(0);
                }
                let s = schema.into_shared();
                self.schemas.push(s.clone());
                s
            }
        };
        let ts = schema.ts_index();
        let cols = schema
            .fields
            .iter()
            .enumerate()
            .map(|(i, f)| match f.ty.element() {
                Some(e) => Col::List(Kind::of(e)),
                None if ts == Some(i) => Col::Ts,
                None => Col::One(Kind::of(&f.ty)),
            })
            .collect();
        Ok(Plan {
            unset_byte: match self.hdr.unset.as_slice() {
                [u] => Some(*u),
                _ => None,
            },
            schema,
            cols,
            sep: Splitter::new(&self.hdr.sep),
            set_sep: Splitter::new(&self.hdr.set_sep),
            empty: Marker(self.hdr.empty.clone()),
            unset: Marker(self.hdr.unset.clone()),
        })
    }

    /// Handles a `#` line.
    fn header_line(&mut self, line: &[u8], ln: u64) -> Result<Step, ParseError> {
        if let Some([b' ' | b'\t', value @ ..]) = line.strip_prefix(b"#separator") {
            if value.is_empty() {
                return Err(self.err(ln, None, format!("empty separator: {}", quote(line))));
            }
            let sep = separator(value).map_err(|why| {
                let m = format!(
                    "invalid #separator {:?}: {why}; expected \\xHH escapes (\\x09) or literal characters (||)",
                    String::from_utf8_lossy(value)
                );
                self.err(ln, None, m)
            })?;
            self.hdr.sep = sep;
            self.dirty = true;
            return Ok(Step::Done);
        }
        let body = &line[1..];
        let splitter = Splitter::new(&self.hdr.sep);
        let (key, value) = splitter.split_once(body).unwrap_or((body, b""));
        let names = |v: &[u8]| -> Vec<String> {
            if v.is_empty() {
                return Vec::new();
            }
            let mut out = Vec::new();
            splitter.split(v, &mut out);
            out.iter()
                .map(|&(s, e)| String::from_utf8_lossy(&v[s..e]).into_owned())
                .collect()
        };
        match key {
            b"set_separator" => {
                let mut s = Vec::new();
                unescape_into(value, &mut s);
                if s.is_empty() {
                    let m = format!("empty set separator: {}", quote(line));
                    return Err(self.err(ln, None, m));
                }
                self.hdr.set_sep = s;
            }
            b"empty_field" => unescape_into(value, &mut self.hdr.empty),
            b"unset_field" => unescape_into(value, &mut self.hdr.unset),
            b"path" => self.hdr.path = Some(String::from_utf8_lossy(value).into_owned()),
            b"fields" => self.hdr.fields = Some((names(value), ln)),
            b"types" => self.hdr.types = Some((names(value), ln)),
            b"close" => {
                self.hdr = Header::default();
                self.plan = None;
                self.dirty = true;
                return Ok(Step::Flush);
            }
            // `#open` and unknown directives change nothing.
            _ => return Ok(Step::Done),
        }
        self.dirty = true;
        Ok(Step::Done)
    }
}

impl tokio_util::codec::Decoder for TsvDecoder {
    type Item = Batch;
    type Error = ReadError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        let (n, out) = self.run(&src[..], false);
        src.advance(n);
        Ok(out?)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Batch>, ReadError> {
        let (n, out) = self.run(&src[..], true);
        src.advance(n);
        Ok(out?)
    }
}

/// Support for decoding one text on several threads (see [`super::parallel`]).
impl TsvDecoder {
    /// A decoder with this one's options, header and schema state but no pending rows, whose
    /// line numbers continue from `line_no`: it decodes data lines that follow the lines this
    /// decoder has seen, independently of it.
    pub fn fork(&self, line_no: u64) -> TsvDecoder {
        let mut d = TsvDecoder::new(self.opts.clone());
        d.hdr = self.hdr.clone();
        d.dirty = self.dirty;
        d.plan = self.plan.clone();
        d.schemas = self.schemas.clone();
        d.line_no = line_no;
        d
    }

    /// Tells the decoder that the text it is about to decode has `bytes` bytes in `lines`
    /// lines, so that the batches it fills are allocated once at about their final size
    /// instead of growing by copying: a batch's rows (at most `batch_rows`) at the text's
    /// bytes per line, plus an eighth (rows take about as many bytes as their text; a string
    /// takes a byte or two more, most other values fewer).
    pub fn expect(&mut self, bytes: usize, lines: usize) {
        let rows = lines.clamp(1, self.opts.batch_rows.max(1));
        let text = bytes / lines.max(1) * rows;
        self.expected = (text + text / 8, rows);
    }

    /// Cuts the first batch this decoder returns at `rows` rows (at least 1, at most
    /// `batch_rows`), the later ones at `batch_rows` as usual. The parallel reader has each
    /// piece's first batch fill up the batch the piece before left partial, so that the
    /// batcher downstream joins the two into one full batch (see [`super::parallel`]).
    pub fn first_batch(&mut self, rows: usize) {
        let batch_rows = self.opts.batch_rows.max(1);
        self.first_cut = if rows.clamp(1, batch_rows) == batch_rows {
            0
        } else {
            rows.max(1)
        };
    }

    /// Builds the schema for data that starts with `first_line` (line `line_no`), if a header
    /// line changed it, so that forks share one [`SchemaRef`] and warnings are given once.
    pub fn prime(&mut self, first_line: &[u8], line_no: u64) -> Result<(), ParseError> {
        if self.dirty {
            if first_line.len() > self.opts.max_line_len {
                // `run` refuses an overlong line before looking at it: no schema from it.
                return Err(self.overlong(line_no, first_line));
            }
            self.plan = None;
            let plan = self.build_plan(line_no, first_line)?;
            self.plan = Some(plan);
            self.dirty = false;
        }
        Ok(())
    }

    /// Sets the number of lines consumed so far (line numbers in errors continue from it).
    pub fn set_lines(&mut self, line_no: u64) {
        self.line_no = line_no;
    }

    /// Takes the rows dropped so far under [`OnError::Skip`], leaving an empty report.
    pub fn take_skip_report(&mut self) -> SkipReport {
        std::mem::take(&mut self.skips)
    }
}

/// Reads a whole Zeek TSV text (for tests and benchmarks): every batch, and the rows skipped
/// under [`OnError::Skip`]. Use [`TsvDecoder`] directly for warnings.
pub fn read_all(bytes: &[u8], opts: ReaderOptions) -> Result<(Vec<Batch>, SkipReport), ReadError> {
    let mut d = TsvDecoder::new(opts);
    let out = d.read_all(bytes)?;
    Ok((out, d.skips))
}

impl TsvDecoder {
    /// Decodes a whole text (followed by end of input) into batches.
    pub fn read_all(&mut self, bytes: &[u8]) -> Result<Vec<Batch>, ReadError> {
        let mut out = Vec::new();
        let mut pos = 0;
        loop {
            let (n, r) = self.run(&bytes[pos..], true);
            pos += n;
            match r? {
                Some(b) => out.push(b),
                None => return Ok(out),
            }
        }
    }
}

/// [`encode_fast`], recording column stats when `stats` (see [`ReaderOptions::column_stats`]).
#[inline(always)]
fn encode_line_fast(plan: &Plan, sep: u8, line: &[u8], b: &mut BatchBuilder, stats: bool) -> bool {
    if stats {
        encode_fast::<true>(plan, sep, line, b)
    } else {
        encode_fast::<false>(plan, sep, line, b)
    }
}

/// The fast path for a line with a one-byte separator: parses each field while finding its
/// end, in one pass. Returns `false`, leaving no row behind, on anything unusual (escapes,
/// subnets, bad values, wrong column counts); the general path
/// [`encode_line`] then handles the line, with the same result for valid input. With
/// `STATS`, each integer and time value is also recorded in the batch's [`ColumnStats`].
#[inline(never)]
fn encode_fast<const STATS: bool>(plan: &Plan, sep: u8, line: &[u8], b: &mut BatchBuilder) -> bool {
    let Some(unset) = plan.unset_byte else {
        return false;
    };
    let mut ts = None;
    // Integer and time values also go to the batch's column stats (for the segment's sketch),
    // when they are wanted (the calls below compile away otherwise).
    let mut unused = ColumnStats::default();
    let (mut row, st) = b.begin_fields(STATS);
    let st = st.unwrap_or(&mut unused);
    let mut i = 0;
    for (c, col) in plan.cols.iter().enumerate() {
        if c > 0 {
            if line.get(i) != Some(&sep) {
                b.discard_row();
                return false;
            }
            i += 1;
        }
        // Each value goes to its column (or to the row: see `BatchBuilder::begin_fields`).
        let mut enc = row.field(c);
        let rest = &line[i..];
        // Unset: the marker followed by the separator or the line end.
        if rest.first() == Some(&unset) && rest.get(1).is_none_or(|&x| x == sep) {
            // Not recorded: a field's unset values are its rows less its recorded values.
            enc.null();
            i += 1;
            continue;
        }
        let used = match *col {
            Col::Ts => parse_ns_prefix(rest).map(|(v, n)| {
                enc.int(v);
                if STATS {
                    // Its range is taken from the values (see `ColumnStats::ts`).
                    st.ts(v);
                }
                ts = Some(v);
                n
            }),
            Col::One(Kind::Time) => parse_ns_prefix(rest).map(|(v, n)| {
                enc.int(v);
                if STATS {
                    st.signed(c, v);
                }
                n
            }),
            Col::One(Kind::Count) => parse_u64_prefix(rest).map(|(v, n)| {
                enc.uint(v);
                if STATS {
                    st.unsigned(c, v);
                }
                n
            }),
            Col::One(Kind::Port) => {
                parse_u64_prefix(rest)
                    .filter(|&(v, _)| v <= MAX_PORT)
                    .map(|(v, n)| {
                        enc.uint(v);
                        if STATS {
                            st.unsigned(c, v);
                        }
                        n
                    })
            }
            Col::One(Kind::Str) => {
                let n = plain_len(rest, sep);
                match rest.get(n) {
                    Some(b'\\') => None,
                    _ => {
                        if plan.empty.is(&rest[..n]) {
                            enc.bytes(b"");
                        } else {
                            enc.bytes_of(rest, n);
                        }
                        Some(n)
                    }
                }
            }
            Col::One(Kind::Addr) => match parse_v4_prefix(rest) {
                Some((a, n)) => {
                    enc.bytes(&a);
                    Some(n)
                }
                None => {
                    // IPv6 (or an error, which the general path reports).
                    let n = plain_len(rest, sep);
                    parse_addr(&rest[..n]).map(|a| {
                        enc.addr(a);
                        n
                    })
                }
            },
            Col::One(Kind::Double) => {
                let n = plain_len(rest, sep);
                parse_f64(&rest[..n]).map(|v| {
                    enc.double(v);
                    n
                })
            }
            Col::One(Kind::Int) => match rest {
                [b'-', digits @ ..] => match parse_u64_prefix(digits) {
                    Some((v, n)) if v <= i64::MAX as u64 => {
                        enc.int(-(v as i64));
                        if STATS {
                            st.signed(c, -(v as i64));
                        }
                        Some(n + 1)
                    }
                    _ => None,
                },
                _ => match parse_u64_prefix(rest) {
                    Some((v, n)) if v <= i64::MAX as u64 => {
                        enc.uint(v);
                        if STATS {
                            st.signed(c, v as i64);
                        }
                        Some(n)
                    }
                    _ => None,
                },
            },
            Col::One(Kind::Bool) => match rest.first() {
                Some(b'T') => {
                    enc.bool(true);
                    Some(1)
                }
                Some(b'F') => {
                    enc.bool(false);
                    Some(1)
                }
                _ => None,
            },
            Col::List(k) => {
                let empty = plan.empty.0.as_slice();
                if rest.starts_with(empty) && rest.get(empty.len()).is_none_or(|&x| x == sep) {
                    enc.array(0);
                    Some(empty.len())
                } else {
                    let n = plain_len(rest, sep);
                    match (rest.get(n), &plan.set_sep) {
                        (Some(b'\\'), _) => None,
                        (_, Splitter::Byte(set_sep)) => {
                            encode_list(k, &rest[..n], *set_sep, unset, &mut enc).then_some(n)
                        }
                        _ => None,
                    }
                }
            }
            _ => None,
        };
        match used {
            Some(n) => i += n,
            None => {
                b.discard_row();
                return false;
            }
        }
    }
    if i != line.len() {
        b.discard_row();
        return false;
    }
    b.finish_row(ts);
    true
}

/// Encodes a non-empty container without escapes, split on a one-byte set separator.
#[inline(never)]
fn encode_list(k: Kind, v: &[u8], set_sep: u8, unset: u8, enc: &mut RowEncoder<'_>) -> bool {
    let count = memchr::memchr_iter(set_sep, v).count() + 1;
    let Ok(count) = u32::try_from(count) else {
        return false;
    };
    enc.array(count);
    for el in v.split(|&c| c == set_sep) {
        if el == [unset] {
            enc.null();
        } else if put_plain(k, el, enc).is_none() {
            return false;
        }
    }
    true
}

/// Length of the leading part of `s` holding neither `sep` nor a backslash (SWAR, eight
/// bytes at a time).
#[inline(always)]
fn plain_len(s: &[u8], sep: u8) -> usize {
    let sep_word = LO * sep as u64;
    let bs_word = LO * b'\\' as u64;
    let mut i = 0;
    while let Some(word) = s.get(i..).and_then(|r| r.first_chunk::<8>()) {
        let w = u64::from_le_bytes(*word);
        let m = zero_bytes(w ^ sep_word) | zero_bytes(w ^ bs_word);
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let tail = s.get(i..).unwrap_or(&[]);
    i + tail
        .iter()
        .position(|&x| x == sep || x == b'\\')
        .unwrap_or(tail.len())
}

/// Encodes one data line as a row of `b`.
#[inline(never)]
fn encode_line(
    plan: &Plan,
    line: &[u8],
    bounds: &mut Vec<(usize, usize)>,
    elems: &mut Vec<(usize, usize)>,
    scratch: &mut Vec<u8>,
    b: &mut BatchBuilder,
) -> Result<(), RowError> {
    bounds.clear();
    let escapes = plan.sep.split(line, bounds);
    if bounds.len() != plan.cols.len() {
        return Err(RowError::Columns(bounds.len()));
    }
    let unset = &plan.unset;
    let mut ts = None;
    let mut enc = b.begin_row();
    for (i, (&(s, e), col)) in bounds.iter().zip(&plan.cols).enumerate() {
        let raw = &line[s..e];
        if unset.is(raw) {
            enc.null();
            continue;
        }
        match *col {
            Col::One(Kind::Str) if plan.empty.is(raw) => enc.bytes(b""),
            Col::One(k) => {
                put(k, raw, &mut enc, scratch, escapes).ok_or(RowError::Value(i))?;
            }
            Col::Ts => {
                let t = put(Kind::Time, raw, &mut enc, scratch, escapes);
                ts = Some(t.ok_or(RowError::Value(i))?);
            }
            Col::List(_) if plan.empty.is(raw) => enc.array(0),
            Col::List(k) => {
                elems.clear();
                plan.set_sep.split(raw, elems);
                enc.array(u32::try_from(elems.len()).map_err(|_| RowError::Value(i))?);
                for &(es, ee) in elems.iter() {
                    let el = &raw[es..ee];
                    if unset.is(el) {
                        enc.null();
                    } else {
                        put(k, el, &mut enc, scratch, escapes).ok_or(RowError::Value(i))?;
                    }
                }
            }
        }
    }
    b.finish_row(ts);
    Ok(())
}

/// Parses one scalar (unescaping when needed) and encodes it; returns the value as `i64` for
/// `time`/`interval` (0 otherwise), `None` when it does not parse.
#[inline]
fn put(
    k: Kind,
    raw: &[u8],
    enc: &mut RowEncoder<'_>,
    scratch: &mut Vec<u8>,
    escapes: bool,
) -> Option<i64> {
    if escapes && memchr(b'\\', raw).is_some() {
        unescape_into(raw, scratch);
        return put_plain(k, scratch, enc);
    }
    put_plain(k, raw, enc)
}

#[inline]
fn put_plain(k: Kind, s: &[u8], enc: &mut RowEncoder<'_>) -> Option<i64> {
    match k {
        Kind::Str => enc.bytes(s),
        Kind::Time => {
            let v = parse_ns(s)?;
            enc.int(v);
            return Some(v);
        }
        Kind::Count => enc.uint(parse_u64(s)?),
        Kind::Port => enc.uint(parse_u64(s).filter(|&v| v <= MAX_PORT)?),
        Kind::Int => enc.int(parse_i64(s)?),
        Kind::Addr => enc.addr(parse_addr(s)?),
        Kind::Bool => enc.bool(parse_bool(s)?),
        Kind::Double => enc.double(parse_f64(s)?),
        Kind::Subnet => {
            let (a, p) = parse_subnet(s)?;
            enc.subnet(a, p);
        }
    }
    Some(0)
}

/// The separator of a `#separator` line's value (not empty): `\xHH` escapes, as Zeek writes
/// it by default (`\x09`, `\x7c\x7c`), and literal characters, as it writes a printable
/// separator a script sets (`||`), mixed in any way. Refused: a backslash that starts no
/// `\xHH` escape, and a value made only of `xHH` (`x09`: escapes whose backslashes a shell
/// ate), which would otherwise split every later line wrongly.
fn separator(value: &[u8]) -> Result<Vec<u8>, &'static str> {
    let escape =
        |c: &[u8]| matches!(c, [b'x', h, l] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit());
    if value.len().is_multiple_of(3) && value.chunks(3).all(escape) {
        return Err("a \\xHH escape without its backslash");
    }
    let mut sep = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        match value[i..] {
            [b'\\', b'x', h, l, ..] if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                sep.push(hex(h) << 4 | hex(l));
                i += 4;
            }
            [b'\\', ..] => return Err("a backslash that starts no \\xHH escape"),
            [c, ..] => {
                sep.push(c);
                i += 1;
            }
            [] => break,
        }
    }
    Ok(sep)
}

/// Replaces `\\` by one backslash and `\xHH` by the byte; other backslashes stay literal.
fn unescape_into(raw: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while let Some(j) = memchr(b'\\', &raw[i..]) {
        let k = i + j;
        out.extend_from_slice(&raw[i..k]);
        match raw.get(k + 1..k + 4) {
            _ if raw.get(k + 1) == Some(&b'\\') => {
                out.push(b'\\');
                i = k + 2;
            }
            Some([b'x', h, l]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                out.push(hex(*h) << 4 | hex(*l));
                i = k + 4;
            }
            _ => {
                out.push(b'\\');
                i = k + 1;
            }
        }
    }
    out.extend_from_slice(&raw[i..]);
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.wrapping_sub(b'A').wrapping_add(10) & 0x0f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn swar_split_matches_naive(s in proptest::collection::vec(
            proptest::sample::select(b"\t\\ab\x89\x09\x08\x0a\xff".to_vec()), 0..40)) {
            let mut got = Vec::new();
            let bs = split_byte(b'\t', &s, &mut got);
            let mut want = Vec::new();
            let mut start = 0;
            for (i, &c) in s.iter().enumerate() {
                if c == b'\t' {
                    want.push((start, i));
                    start = i + 1;
                }
            }
            want.push((start, s.len()));
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(bs, s.contains(&b'\\'));
        }
    }

    const TOKENS: [&[&str]; 10] = [
        // time
        &[
            "1258531221.486539",
            "-1.5",
            "0",
            "5.",
            ".5",
            "9223372035.999999999",
            "9223372036.854775807",
            "12345678901.5",
            "1.1234567891",
            "1e5",
            "-",
            "",
            "x",
        ],
        // count
        &[
            "0",
            "7",
            "18446744073709551615",
            "18446744073709551616",
            "-1",
            "+1",
            "-",
            "1x",
        ],
        // int
        &[
            "-5",
            "-0",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "+3",
            "-",
        ],
        // addr
        &[
            "1.2.3.4",
            "255.255.255.255",
            "01.2.3.4",
            "1.2.3.256",
            "::1",
            "1.2.3",
            "1.2.3.4.5",
            "\\x31.2.3.4",
            "-",
            "1.2.3.4x",
        ],
        // string
        &["abc", "(empty)", "-", "a\\x2cb", "", "\\", "--", "(empty)x"],
        // bool
        &["T", "F", "TT", "-", "", "t"],
        // vector[count]
        &[
            "1,2,3", "(empty)", "-", "", "1,-", "(empty)x", "7", "1,,2", ",", "1,x", "-,-",
            "1\\x2c2",
        ],
        // double
        &[
            "1.5", "-", "inf", "-inf", "nan", "1e300", "x", "infinity", "1.5.5", "",
        ],
        // set[addr]
        &[
            "1.2.3.4,::1",
            "(empty)",
            "-",
            "1.2.3.4",
            "1.2.3.4,-",
            "x",
            "",
        ],
        // vector[string]
        &[
            "a,b c,d",
            "(empty)",
            "-",
            ",",
            "a,,b",
            "-,(empty)",
            "a\\,b",
            "a\\x2cb,c",
            "",
        ],
    ];

    /// The fast path, when it accepts a line, encodes exactly what the general path does (in
    /// column mode too, see `BatchBuilder::columnar`); over
    /// many pseudo-random lines from valid and invalid tokens, both outcomes occur.
    #[test]
    fn fast_path_agrees_with_general_path() {
        let header = "#fields\tts\tc\ti\ta\ts\tb\tv\td\tsa\tvs\n\
                      #types\ttime\tcount\tint\taddr\tstring\tbool\tvector[count]\tdouble\t\
                      set[addr]\tvector[string]\n";
        let mut d = TsvDecoder::new(ReaderOptions::default());
        let (_, r) = d.run(header.as_bytes(), false);
        assert!(r.is_ok());
        let plan = d.build_plan(3, b"x").unwrap();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        let (mut accepted, mut rejected) = (0, 0);
        for _ in 0..20_000 {
            // Mostly the first (valid) token, so that whole lines are often valid.
            let mut fields: Vec<&str> = TOKENS
                .iter()
                .map(|t| match next() % 3 {
                    0 => t[next() % t.len()],
                    _ => t[0],
                })
                .collect();
            match next() % 10 {
                0 => {
                    fields.pop();
                }
                1 => fields.push("1"),
                _ => {}
            }
            let line = fields.join("\t");
            let mut fast = BatchBuilder::new(plan.schema.clone());
            let ok = encode_fast::<true>(&plan, b'\t', line.as_bytes(), &mut fast);
            let fast = fast.finish();
            // In column mode, the same values, field by field (or none, the row refused).
            let mut columnar = BatchBuilder::new(plan.schema.clone()).columnar();
            let ok_columnar = encode_fast::<true>(&plan, b'\t', line.as_bytes(), &mut columnar);
            let columnar = columnar.finish();
            assert_eq!(ok, ok_columnar, "{line:?}");
            assert_eq!(columnar.columns().map(<[_]>::len), Some(plan.cols.len()));
            assert_eq!(fast, columnar, "{line:?}");
            let mut general = BatchBuilder::new(plan.schema.clone());
            let (mut bounds, mut elems, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
            let res = encode_line(
                &plan,
                line.as_bytes(),
                &mut bounds,
                &mut elems,
                &mut scratch,
                &mut general,
            );
            let general = general.finish();
            if ok {
                accepted += 1;
                assert!(res.is_ok(), "{line:?}");
                assert_eq!(fast, general, "{line:?}");
            } else {
                rejected += 1;
                assert!(fast.is_empty());
            }
        }
        assert!(accepted > 2000 && rejected > 2000, "{accepted} {rejected}");
    }

    #[test]
    fn unescapes_like_zeek() {
        let mut out = Vec::new();
        unescape_into(br"a\\b\x41\xzz\,\", &mut out);
        assert_eq!(out, br"a\bA\xzz\,\");
        unescape_into(br"\x0", &mut out);
        assert_eq!(out, br"\x0");
    }
}

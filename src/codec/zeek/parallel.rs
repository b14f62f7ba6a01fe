//! Zeek TSV decoding on several threads, with output identical to the sequential decoder.
//!
//! Parsing is the most expensive stage of an import, and a Zeek log is easy to split: data lines
//! are independent once the header that precedes them is known. [`ParallelTsvReader`] takes
//! decompressed text in chunks (cut anywhere) and:
//!
//! 1. joins each chunk's first partial line with the previous chunk's last one, so that every
//!    *text* it works on holds complete lines;
//! 2. cuts texts into *pieces*: a run of header lines followed by a run of data lines, long data
//!    runs cut further at line ends (about [`PIECE_BYTES`] each);
//! 3. applies each piece's header lines to a *head* decoder, in input order, on a coordinator
//!    thread, and builds the schema there ([`TsvDecoder::prime`]), so every schema is built once;
//! 4. hands the data lines with a [`TsvDecoder::fork`] of the head to a pool of worker threads;
//! 5. returns the workers' batches in input order.
//!
//! Each batch comes with where its rows lie in the text ([`RowSpan`], see
//! [`ParallelTsvReader::next_span`]): pieces start and end at line starts, so the coordinator
//! knows each piece's byte range, and a piece's last batch ends at the piece's end.
//!
//! The coordinator counts the lines of each piece (a SIMD byte count, far cheaper than
//! parsing) so that every fork reports absolute line numbers. The count also places each
//! piece's batch cuts where a sequential decoder's would be: a piece's first batch takes just
//! the rows that fill up the previous piece's last, partial batch
//! ([`TsvDecoder::first_batch`]), and the batcher downstream appends the one to the other. A
//! piece cut at a chunk's end (pieces rarely hold whole multiples of a batch) would otherwise
//! leave a small batch behind it: W1000 (about 8,650 rows a 1 MiB chunk, batches of 8,192)
//! was stored in 1,979 batches instead of 1,033, and every scan paid for each batch's own
//! column frames. The cuts are placed from data lines, not rows: an empty or skipped line
//! only shifts them, never changes which rows are decoded. Memory is bounded: at most
//! `2 × threads + 2` pieces are in flight. The iterator never waits for input while decoded
//! batches are ready, so a slowly fed live stream flows through without delay.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use bytes::Bytes;
use memchr::{memchr, memmem, memrchr};

use super::tsv::TsvDecoder;
use crate::batch::Batch;
use crate::checkpoint::RowSpan;
use crate::codec::ReaderOptions;
use crate::error::{OnError, ReadError, SkipReport};

/// Target size of the data part of one piece.
pub const PIECE_BYTES: usize = 2 << 20;

/// What a worker (or the coordinator, for header lines) made of one piece.
struct PieceResult {
    batches: Vec<Batch>,
    /// The piece's byte range in the text (a run of whole lines), when it has rows.
    span: Option<(u64, u64)>,
    skips: SkipReport,
    warnings: Vec<String>,
    error: Option<ReadError>,
}

type Job = (TsvDecoder, Bytes, (u64, u64), mpsc::Sender<PieceResult>);

/// Decodes Zeek TSV text on a pool of threads; an iterator of batches in input order.
///
/// A coordinator thread reads the chunks, applies header lines and hands out pieces; worker
/// threads decode them; the iterator returns their batches in order. The iterator never waits
/// for input while decoded batches are ready, so a slow live stream (stdin) flows through.
///
/// ```
/// use weir::unstable::codec::zeek::parallel::ParallelTsvReader;
/// use weir::unstable::codec::ReaderOptions;
///
/// let text = b"#fields\tn\n#types\tcount\n1\n2\n3\n".to_vec();
/// // Chunks may cut lines anywhere.
/// let chunks = vec![Ok(text[..13].to_vec()), Ok(text[13..].to_vec())];
/// let reader = ParallelTsvReader::new(chunks.into_iter(), ReaderOptions::new("example"), 2);
/// let rows: usize = reader.map(|b| b.unwrap().len()).sum();
/// assert_eq!(rows, 3);
/// ```
pub struct ParallelTsvReader<I> {
    /// The coordinator, until the first call to `next` starts it.
    start: Option<Coordinator<I>>,
    threads: usize,
    results: Option<mpsc::Receiver<mpsc::Receiver<PieceResult>>>,
    ready: VecDeque<(Batch, Option<RowSpan>)>,
    skips: SkipReport,
    warnings: Vec<String>,
    error: Option<ReadError>,
    finished: bool,
}

/// The state of the coordinator thread.
struct Coordinator<I> {
    chunks: I,
    opts: ReaderOptions,
    head: TsvDecoder,
    carry: Vec<u8>,
    /// Text offset of `carry`'s first byte.
    carry_at: u64,
    /// Text offset of the next chunk's first byte (bytes read so far).
    read: u64,
    /// Skip mode: dropping the rest of an overlong line.
    discarding: bool,
    /// Stop reading input (after a fatal error, or when the consumer is gone).
    input_done: bool,
    jobs: Option<mpsc::SyncSender<Job>>,
    out: Option<mpsc::SyncSender<mpsc::Receiver<PieceResult>>>,
    /// Lines handed out so far.
    lines: u64,
    /// Data lines handed to workers so far: about the rows decoded, which places the batch
    /// cuts of the next piece (see the module docs).
    data_lines: u64,
    piece_bytes: usize,
}

impl<I> ParallelTsvReader<I>
where
    I: Iterator<Item = io::Result<Vec<u8>>> + Send + 'static,
{
    /// Decodes `chunks` of text with `threads` worker threads.
    pub fn new(chunks: I, opts: ReaderOptions, threads: usize) -> ParallelTsvReader<I> {
        ParallelTsvReader {
            start: Some(Coordinator {
                chunks,
                head: TsvDecoder::new(opts.clone()),
                opts,
                carry: Vec::new(),
                carry_at: 0,
                read: 0,
                discarding: false,
                input_done: false,
                jobs: None,
                out: None,
                lines: 0,
                data_lines: 0,
                piece_bytes: PIECE_BYTES,
            }),
            threads: threads.max(1),
            results: None,
            ready: VecDeque::new(),
            skips: SkipReport::default(),
            warnings: Vec::new(),
            error: None,
            finished: false,
        }
    }

    /// Sets the target size of a piece's data (default [`PIECE_BYTES`]; at least 1).
    pub fn with_piece_bytes(mut self, bytes: usize) -> ParallelTsvReader<I> {
        if let Some(c) = self.start.as_mut() {
            c.piece_bytes = bytes.max(1);
        }
        self
    }

    /// Rows dropped so far under [`OnError::Skip`].
    pub fn skip_report(&self) -> &SkipReport {
        &self.skips
    }

    /// Takes the warnings collected so far (unknown type names read as string).
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Starts the coordinator and worker threads.
    fn spawn(&mut self) {
        let Some(mut c) = self.start.take() else {
            return;
        };
        let threads = self.threads;
        let (out, results) = mpsc::sync_channel(threads * 2 + 2);
        let (jobs, rx) = mpsc::sync_channel::<Job>(threads * 2);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            let spawned = thread::Builder::new()
                .name(format!("weir-parse-{i}"))
                .spawn(move || worker(&rx));
            if let Err(e) = spawned {
                self.error = Some(ReadError::Io {
                    source_name: c.opts.source_name.clone(),
                    error: e,
                });
                return;
            }
        }
        c.jobs = Some(jobs);
        c.out = Some(out);
        let name = c.opts.source_name.clone();
        let spawned = thread::Builder::new()
            .name("weir-parse-coordinator".into())
            .spawn(move || c.run());
        match spawned {
            Ok(_) => self.results = Some(results),
            Err(error) => {
                self.error = Some(ReadError::Io {
                    source_name: name,
                    error,
                })
            }
        }
    }

    /// Takes the next piece's result (waiting for it). Returns `false` when none is left.
    fn collect(&mut self) -> bool {
        let Some(results) = &self.results else {
            return false;
        };
        let Ok(rx) = results.recv() else {
            return false;
        };
        match rx.recv() {
            Ok(r) => {
                self.skips.merge(&r.skips);
                self.warnings.extend(r.warnings);
                // The piece's last batch ends at the piece's end, unless an error stopped it.
                let count = r.batches.len();
                let mut rows = 0u64;
                for (i, b) in r.batches.into_iter().enumerate() {
                    let span = r.span.map(|(start, end)| RowSpan {
                        line_start: start,
                        rows_before: rows,
                        end: (i + 1 == count && r.error.is_none()).then_some(end),
                    });
                    rows += b.len() as u64;
                    self.ready.push_back((b, span));
                }
                if let Some(e) = r.error {
                    self.error = Some(e);
                }
            }
            Err(_) => {
                self.error = Some(ReadError::Io {
                    source_name: "input".into(),
                    error: io::Error::other("a parser thread stopped unexpectedly"),
                })
            }
        }
        true
    }
}

impl<I: Iterator<Item = io::Result<Vec<u8>>>> Coordinator<I> {
    /// Reads all input, handing out pieces in order, then lets the workers finish.
    fn run(mut self) {
        while !self.input_done && self.feed() {}
        // Dropping the job sender ends the workers once the queue is empty.
        self.jobs = None;
    }

    /// Queues a piece whose result is already known (header lines, an error).
    fn push_done(&mut self, result: PieceResult) {
        let (tx, rx) = mpsc::channel();
        let _ = tx.send(result);
        self.push(rx);
    }

    /// Queues the receiver of a piece's result, in input order.
    fn push(&mut self, rx: mpsc::Receiver<PieceResult>) {
        let delivered = self.out.as_ref().is_some_and(|out| out.send(rx).is_ok());
        if !delivered {
            // The consumer is gone: stop reading.
            self.input_done = true;
        }
    }

    fn fatal(&mut self, error: ReadError) {
        self.push_done(PieceResult {
            batches: Vec::new(),
            span: None,
            skips: SkipReport::default(),
            warnings: Vec::new(),
            error: Some(error),
        });
        self.input_done = true;
    }

    /// Splits a text of complete lines, which starts at text offset `at`, into pieces and
    /// queues them.
    fn submit_text(&mut self, text: Bytes, at: u64) {
        let mut pos = 0;
        while pos < text.len() && !self.input_done {
            // Header lines, applied to the head in input order; their result is known now.
            self.head.set_lines(self.lines);
            let header_start = pos;
            let mut error = None;
            while pos < text.len() && text[pos] == b'#' && error.is_none() {
                let end = memchr(b'\n', &text[pos..]).map_or(text.len(), |i| pos + i + 1);
                if let Err(e) = self.head.read_all(&text[pos..end]) {
                    error = Some(e);
                }
                pos = end;
            }
            if pos > header_start {
                let lines = self.head.lines();
                self.lines = lines;
                let skips = self.head.take_skip_report();
                let failed = error.is_some();
                let warnings = self.head.take_warnings();
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    span: None,
                    skips,
                    warnings,
                    error,
                });
                if failed {
                    self.input_done = true;
                    return;
                }
            }
            if pos == text.len() {
                return;
            }
            // A data run: up to the next header line, cut at about PIECE_BYTES.
            let run_end = memmem::find(&text[pos..], b"\n#").map_or(text.len(), |i| pos + i + 1);
            let mut end = run_end;
            if end - pos > self.piece_bytes {
                end = memrchr(b'\n', &text[pos..pos + self.piece_bytes])
                    .map_or(run_end, |i| pos + i + 1);
            }
            let data = text.slice(pos..end);
            let span = (at + pos as u64, at + end as u64);
            pos = end;
            // The schema is built at the first line that is not empty, as the decoder does.
            let start_line = self.lines;
            let mut first = (&data[..0], 0);
            for (n, line) in data.split(|&b| b == b'\n').enumerate() {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if !line.is_empty() {
                    first = (line, start_line + n as u64 + 1);
                    break;
                }
            }
            let newlines = bytecount::count(&data, b'\n');
            self.lines += newlines as u64 + (!data.ends_with(b"\n")) as u64;
            self.head.set_lines(start_line);
            let primed = match first {
                (line, n) if n > 0 => self.head.prime(line, n),
                _ => Ok(()),
            };
            if let Err(e) = primed {
                if self.opts.on_error == OnError::Fail {
                    self.fatal(ReadError::Parse(e));
                    return;
                }
                // Skip mode: the fork meets the same error on each line and records each one.
            }
            let mut fork = self.head.fork(start_line);
            fork.expect(data.len(), newlines);
            let batch_rows = self.opts.batch_rows.max(1) as u64;
            fork.first_batch((batch_rows - self.data_lines % batch_rows) as usize);
            self.data_lines += newlines as u64 + (!data.ends_with(b"\n")) as u64;
            let (tx, rx) = mpsc::channel();
            let sent = match &self.jobs {
                Some(jobs) => jobs.send((fork, data, span, tx)).is_ok(),
                None => false,
            };
            if !sent {
                let source_name = self.opts.source_name.clone();
                self.fatal(ReadError::Io {
                    source_name,
                    error: io::Error::other("the parser threads stopped unexpectedly"),
                });
                return;
            }
            self.push(rx);
        }
    }

    /// Reads the next chunk and queues its complete lines. Returns `false` at end of input.
    fn feed(&mut self) -> bool {
        let base = self.read;
        let chunk = match self.chunks.next() {
            Some(Ok(c)) => c,
            Some(Err(error)) => {
                let source_name = self.opts.source_name.clone();
                self.fatal(ReadError::Io { source_name, error });
                return false;
            }
            None => {
                if !self.carry.is_empty() && !self.discarding {
                    let last = Bytes::from(std::mem::take(&mut self.carry));
                    self.submit_text(last, self.carry_at);
                }
                return false;
            }
        };
        self.read += chunk.len() as u64;
        let mut start = 0;
        if self.discarding {
            match memchr(b'\n', &chunk) {
                Some(i) => {
                    start = i + 1;
                    self.discarding = false;
                }
                None => return true,
            }
        }
        if !self.carry.is_empty() {
            // The line cut by the previous chunk, joined with its end in this one.
            match memchr(b'\n', &chunk[start..]) {
                Some(i) => {
                    self.carry.extend_from_slice(&chunk[start..start + i + 1]);
                    start += i + 1;
                    let joint = Bytes::from(std::mem::take(&mut self.carry));
                    self.submit_text(joint, self.carry_at);
                }
                None => {
                    self.carry.extend_from_slice(&chunk[start..]);
                    self.check_overlong();
                    return true;
                }
            }
        }
        match memrchr(b'\n', &chunk[start..]) {
            Some(i) => {
                let end = start + i + 1;
                self.carry.extend_from_slice(&chunk[end..]);
                self.carry_at = base + end as u64;
                let text = Bytes::from(chunk).slice(start..end);
                self.submit_text(text, base + start as u64);
            }
            None => {
                self.carry.extend_from_slice(&chunk[start..]);
                self.carry_at = base + start as u64;
            }
        }
        self.check_overlong();
        true
    }

    /// A partial line longer than the maximum: an error, or in skip mode dropped.
    fn check_overlong(&mut self) {
        let max = self.opts.max_line_len;
        if self.carry.len() <= max.saturating_add(1) {
            return;
        }
        // A fork at the current state reports the error exactly as the sequential decoder does.
        let mut probe = self.head.fork(self.lines);
        self.lines += 1;
        let mut buf = bytes::BytesMut::from(&self.carry[..]);
        let r = tokio_util::codec::Decoder::decode(&mut probe, &mut buf);
        let error = r.err();
        let skips = probe.take_skip_report();
        self.carry.clear();
        match self.opts.on_error {
            OnError::Skip => {
                self.discarding = true;
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    span: None,
                    skips,
                    warnings: Vec::new(),
                    error: None,
                });
            }
            OnError::Fail => {
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    span: None,
                    skips,
                    warnings: Vec::new(),
                    error,
                });
                self.input_done = true;
            }
        }
    }
}

fn worker(rx: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok((mut dec, text, span, tx)) = job else {
            return;
        };
        let mut batches = Vec::new();
        let mut error = None;
        let mut pos = 0;
        // Like read_all, but keeps the batches decoded before an error.
        // The text is decoded in place (no copy per batch into a BytesMut).
        loop {
            let (n, r) = dec.run(&text[pos..], true);
            pos += n;
            match r {
                Ok(Some(b)) => batches.push(b),
                Ok(None) => break,
                Err(e) => {
                    error = Some(e.into());
                    break;
                }
            }
        }
        let _ = tx.send(PieceResult {
            batches,
            span: Some(span),
            warnings: dec.take_warnings(),
            skips: dec.take_skip_report(),
            error,
        });
    }
}

impl<I> Iterator for ParallelTsvReader<I>
where
    I: Iterator<Item = io::Result<Vec<u8>>> + Send + 'static,
{
    type Item = Result<Batch, ReadError>;

    fn next(&mut self) -> Option<Result<Batch, ReadError>> {
        self.next_span().map(|r| r.map(|(b, _)| b))
    }
}

impl<I> ParallelTsvReader<I>
where
    I: Iterator<Item = io::Result<Vec<u8>>> + Send + 'static,
{
    /// As [`Iterator::next`], with where the batch's rows lie in the text (offsets count the
    /// bytes of the chunks from the first one; `None` for no batch of this reader).
    pub fn next_span(&mut self) -> Option<Result<(Batch, Option<RowSpan>), ReadError>> {
        self.spawn();
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Some(Ok(b));
            }
            if let Some(e) = self.error.take() {
                // Dropping the results channel stops the coordinator and then the workers.
                self.results = None;
                self.finished = true;
                return Some(Err(e));
            }
            if self.finished || !self.collect() {
                self.finished = true;
                self.results = None;
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of the numbers 0 to 299, its header repeated before 170.
    fn numbers_log() -> Vec<u8> {
        let mut text = String::from("#fields\tn\n#types\tcount\n");
        for i in 0..300 {
            if i == 170 {
                text.push_str("#fields\tn\n#types\tcount\n");
            }
            text.push_str(&format!("{i}\n"));
        }
        text.into_bytes()
    }

    /// Every batch's span places its rows exactly: the data lines before its line start
    /// plus its `rows_before` are the rows before it, and its `end` (when given) is a line
    /// start before which every row is out; with pieces and chunks cut anywhere and a header
    /// block in the middle.
    #[test]
    fn spans_place_every_batch_exactly() {
        let text = numbers_log();
        let rows_before = |at: u64| {
            text[..at as usize]
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty() && l[0] != b'#')
                .count() as u64
        };
        for (chunk, piece) in [(7, 40), (64, 100), (1000, 3)] {
            let chunks: Vec<io::Result<Vec<u8>>> =
                text.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
            let mut opts = ReaderOptions::new("spans");
            opts.batch_rows = 9;
            let mut r = ParallelTsvReader::new(chunks.into_iter(), opts, 3).with_piece_bytes(piece);
            let mut seen = 0u64;
            let mut ends = 0;
            while let Some(item) = r.next_span() {
                let (b, span) = item.unwrap();
                let span = span.unwrap();
                assert_eq!(rows_before(span.line_start) + span.rows_before, seen);
                seen += b.len() as u64;
                if let Some(e) = span.end {
                    ends += 1;
                    assert!(e as usize == text.len() || text[e as usize - 1] == b'\n');
                    assert_eq!(rows_before(e), seen, "chunk {chunk}, piece {piece}");
                }
            }
            assert_eq!(seen, 300);
            assert!(ends > 1);
        }
    }

    /// Pieces end anywhere, but batch cuts fall where a sequential decoder's would: no batch
    /// holds rows on both sides of a multiple of `batch_rows` (so the batcher, appending,
    /// makes every batch full), also across a repeated header; and pieces do end inside a
    /// batch (some batches are short), or this would prove nothing.
    #[test]
    fn batch_cuts_fall_on_multiples_of_the_batch_size_across_pieces() {
        let text = numbers_log();
        for (chunk, piece) in [(7, 40), (64, 100), (1000, 3), (1000, 1000)] {
            let chunks: Vec<io::Result<Vec<u8>>> =
                text.chunks(chunk).map(|c| Ok(c.to_vec())).collect();
            let mut opts = ReaderOptions::new("cuts");
            opts.batch_rows = 9;
            let r = ParallelTsvReader::new(chunks.into_iter(), opts, 3).with_piece_bytes(piece);
            let (mut seen, mut short) = (0, 0);
            for b in r {
                let n = b.unwrap().len();
                assert!(n <= 9);
                assert_eq!(seen / 9, (seen + n - 1) / 9, "chunk {chunk}, piece {piece}");
                seen += n;
                short += usize::from(n < 9);
            }
            assert_eq!(seen, 300);
            assert!(short > 1, "chunk {chunk}, piece {piece}");
        }
    }
}

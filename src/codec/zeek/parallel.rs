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
//! 3. applies each piece's header lines to a *head* decoder, in input order, on the calling
//!    thread, and builds the schema there ([`TsvDecoder::prime`]), so every schema is built once;
//! 4. hands the data lines with a [`TsvDecoder::fork`] of the head to a pool of worker threads;
//! 5. returns the workers' batches in input order.
//!
//! The calling thread counts the lines of each piece (a SIMD byte count, far cheaper than
//! parsing) so that every fork reports absolute line numbers. Memory is bounded: at most
//! `2 × threads + 2` pieces are in flight.

use std::collections::VecDeque;
use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

use bytes::Bytes;
use memchr::{memchr, memmem, memrchr};

use super::tsv::TsvDecoder;
use crate::batch::Batch;
use crate::codec::ReaderOptions;
use crate::error::{OnError, ParseError, ReadError, SkipReport};

/// Target size of the data part of one piece.
pub const PIECE_BYTES: usize = 2 << 20;

/// What a worker (or the head, for header-only pieces) made of one piece.
struct PieceResult {
    batches: Vec<Batch>,
    skips: SkipReport,
    error: Option<ParseError>,
}

type Job = (TsvDecoder, Bytes, mpsc::Sender<PieceResult>);

/// Decodes Zeek TSV text on a pool of threads; an iterator of batches in input order.
///
/// ```
/// use weir::codec::zeek::parallel::ParallelTsvReader;
/// use weir::codec::ReaderOptions;
///
/// let text = b"#fields\tn\n#types\tcount\n1\n2\n3\n".to_vec();
/// // Chunks may cut lines anywhere.
/// let chunks = vec![Ok(text[..13].to_vec()), Ok(text[13..].to_vec())];
/// let reader = ParallelTsvReader::new(chunks.into_iter(), ReaderOptions::new("example"), 2);
/// let rows: usize = reader.map(|b| b.unwrap().len()).sum();
/// assert_eq!(rows, 3);
/// ```
pub struct ParallelTsvReader<I> {
    chunks: I,
    opts: ReaderOptions,
    head: TsvDecoder,
    carry: Vec<u8>,
    /// Skip mode: dropping the rest of an overlong line.
    discarding: bool,
    input_done: bool,
    jobs: Option<mpsc::SyncSender<Job>>,
    workers: Vec<thread::JoinHandle<()>>,
    in_flight: VecDeque<mpsc::Receiver<PieceResult>>,
    max_in_flight: usize,
    ready: VecDeque<Batch>,
    /// Lines of all pieces handed out so far.
    lines: u64,
    skips: SkipReport,
    error: Option<ReadError>,
    /// An input error, raised once the pieces before it are returned.
    deferred: Option<ReadError>,
    piece_bytes: usize,
    finished: bool,
}

impl<I: Iterator<Item = io::Result<Vec<u8>>>> ParallelTsvReader<I> {
    /// Decodes `chunks` of text with `threads` worker threads.
    pub fn new(chunks: I, opts: ReaderOptions, threads: usize) -> ParallelTsvReader<I> {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::sync_channel::<Job>(threads * 2);
        let rx = Arc::new(Mutex::new(rx));
        let workers = (0..threads)
            .map(|i| {
                let rx = Arc::clone(&rx);
                thread::Builder::new()
                    .name(format!("weir-parse-{i}"))
                    .spawn(move || worker(&rx))
            })
            .filter_map(Result::ok)
            .collect();
        ParallelTsvReader {
            chunks,
            head: TsvDecoder::new(opts.clone()),
            opts,
            carry: Vec::new(),
            discarding: false,
            input_done: false,
            jobs: Some(tx),
            workers,
            in_flight: VecDeque::new(),
            max_in_flight: threads * 2 + 2,
            ready: VecDeque::new(),
            lines: 0,
            skips: SkipReport::default(),
            error: None,
            deferred: None,
            piece_bytes: PIECE_BYTES,
            finished: false,
        }
    }

    /// Sets the target size of a piece's data (default [`PIECE_BYTES`]; at least 1).
    pub fn with_piece_bytes(mut self, bytes: usize) -> ParallelTsvReader<I> {
        self.piece_bytes = bytes.max(1);
        self
    }

    /// Rows dropped so far under [`OnError::Skip`], with absolute line numbers.
    pub fn skip_report(&self) -> &SkipReport {
        &self.skips
    }

    /// Warnings from building schemas (unknown type names read as string).
    pub fn take_warnings(&mut self) -> Vec<String> {
        self.head.take_warnings()
    }

    /// Lines read so far (handed to the workers, not necessarily decoded yet).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Queues a piece whose result is already known (header lines only, or an error).
    fn push_done(&mut self, result: PieceResult) {
        let (tx, rx) = mpsc::channel();
        let _ = tx.send(result);
        self.in_flight.push_back(rx);
    }

    /// Splits a text of complete lines into pieces and queues them.
    fn submit_text(&mut self, text: Bytes) {
        let mut pos = 0;
        while pos < text.len() {
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
                let error = match error {
                    Some(ReadError::Parse(p)) => Some(p),
                    Some(ReadError::Io { error, .. }) => Some(ParseError {
                        source_name: self.opts.source_name.clone(),
                        line: lines,
                        field: None,
                        message: error.to_string(),
                    }),
                    None => None,
                };
                let failed = error.is_some();
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    skips,
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
            self.lines += bytecount::count(&data, b'\n') as u64 + (!data.ends_with(b"\n")) as u64;
            self.head.set_lines(start_line);
            let primed = match first {
                (line, n) if n > 0 => self.head.prime(line, n),
                _ => Ok(()),
            };
            if let Err(e) = primed {
                if self.opts.on_error == OnError::Fail {
                    self.push_done(PieceResult {
                        batches: Vec::new(),
                        skips: SkipReport::default(),
                        error: Some(e),
                    });
                    self.input_done = true;
                    return;
                }
                // Skip mode: the fork meets the same error on each line and records each one.
            }
            let fork = self.head.fork(start_line);
            let (tx, rx) = mpsc::channel();
            let sent = match &self.jobs {
                Some(jobs) => jobs.send((fork, data, tx)).is_ok(),
                None => false,
            };
            if !sent {
                self.deferred = Some(ReadError::Io {
                    source_name: self.opts.source_name.clone(),
                    error: io::Error::other("the parser threads stopped unexpectedly"),
                });
                self.input_done = true;
                return;
            }
            self.in_flight.push_back(rx);
        }
    }

    /// Reads the next chunk and queues its complete lines. Returns `false` at end of input.
    fn feed(&mut self) -> bool {
        let chunk = match self.chunks.next() {
            Some(Ok(c)) => c,
            Some(Err(error)) => {
                self.deferred = Some(ReadError::Io {
                    source_name: self.opts.source_name.clone(),
                    error,
                });
                return false;
            }
            None => {
                if !self.carry.is_empty() && !self.discarding {
                    let last = Bytes::from(std::mem::take(&mut self.carry));
                    self.submit_text(last);
                }
                return false;
            }
        };
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
                    self.submit_text(joint);
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
                let text = Bytes::from(chunk).slice(start..end);
                self.submit_text(text);
            }
            None => self.carry.extend_from_slice(&chunk[start..]),
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
        let error = match r {
            Err(ReadError::Parse(p)) => Some(p),
            _ => None,
        };
        let skips = probe.take_skip_report();
        self.carry.clear();
        match self.opts.on_error {
            OnError::Skip => {
                self.discarding = true;
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    skips,
                    error: None,
                });
            }
            OnError::Fail => {
                self.push_done(PieceResult {
                    batches: Vec::new(),
                    skips,
                    error,
                });
                self.input_done = true;
            }
        }
    }

    /// Takes the oldest piece's result (waiting for it) and rebases its line numbers.
    fn collect(&mut self) {
        let Some(rx) = self.in_flight.pop_front() else {
            return;
        };
        let Ok(r) = rx.recv() else {
            self.error = Some(ReadError::Io {
                source_name: self.opts.source_name.clone(),
                error: io::Error::other("a parser thread stopped unexpectedly"),
            });
            return;
        };
        self.skips.merge(&r.skips);
        self.ready.extend(r.batches);
        if let Some(e) = r.error {
            self.error = Some(ReadError::Parse(e));
        }
    }
}

fn worker(rx: &Mutex<mpsc::Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok((mut dec, text, tx)) = job else { return };
        let mut batches = Vec::new();
        let mut error = None;
        let mut pos = 0;
        // Like read_all, but keeps the batches decoded before an error.
        loop {
            let mut buf = bytes::BytesMut::from(&text[pos..]);
            let before = buf.len();
            match tokio_util::codec::Decoder::decode_eof(&mut dec, &mut buf) {
                Ok(Some(b)) => {
                    batches.push(b);
                    pos += before - buf.len();
                }
                Ok(None) => break,
                Err(ReadError::Parse(e)) => {
                    error = Some(e);
                    break;
                }
                Err(ReadError::Io { .. }) => break,
            }
        }
        let _ = tx.send(PieceResult {
            batches,
            skips: dec.take_skip_report(),
            error,
        });
    }
}

impl<I: Iterator<Item = io::Result<Vec<u8>>>> Iterator for ParallelTsvReader<I> {
    type Item = Result<Batch, ReadError>;

    fn next(&mut self) -> Option<Result<Batch, ReadError>> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Some(Ok(b));
            }
            if let Some(e) = self.error.take() {
                self.finish();
                return Some(Err(e));
            }
            if self.finished {
                return None;
            }
            // Keep the pool busy: read ahead until enough pieces are in flight.
            while !self.input_done && self.in_flight.len() < self.max_in_flight {
                if !self.feed() {
                    self.input_done = true;
                }
            }
            if self.in_flight.is_empty() {
                match self.deferred.take() {
                    Some(e) => self.error = Some(e),
                    None => self.finish(),
                }
                continue;
            }
            self.collect();
        }
    }
}

impl<I> ParallelTsvReader<I> {
    /// Stops the workers: no more pieces will be sent.
    fn finish(&mut self) {
        self.finished = true;
        self.in_flight.clear();
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl<I> Drop for ParallelTsvReader<I> {
    fn drop(&mut self) {
        self.jobs = None;
        // Workers end once the job channel is closed; results nobody reads are dropped.
        self.in_flight.clear();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

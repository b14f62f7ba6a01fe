//! Running a query on a blocking thread and streaming its output (`POST /api/v1/query`).
//!
//! The chain runs on one of tokio's blocking threads, holding a query slot of
//! [`AppState::slot`] until it ends. Its output is encoded as `weir export --to json` (one
//! event per line), `--to csv` or `--to arrow` writes it, or as one Parquet file (held until
//! the search ends, within the response cap: [`crate::codec::arrow::parquet_download`]), and handed to the connection in pieces of
//! [`CHUNK_BYTES`] through a channel of [`CHUNKS_IN_FLIGHT`] pieces: a slow client slows the
//! search down, and a client that goes away (the channel's receiver dropped with the
//! response body) stops it.
//!
//! Every query reads through its own handle of the server's resident reader
//! (a handle of its [`crate::Db`]), which carries the query's cancellation token ([`Archive::cancel_on`]), cancelled at
//! the query timeout and when the answer is dropped (sent, or its client gone): the search
//! stops reading at its next batch even when it has produced no output yet (an aggregation,
//! a search with few hits), and frees its query slot. It is also cancelled when the running
//! queries pass the server's memory cap and it started last ([`super::memory`]): it is then
//! answered `503`, or its answer ends with that error.
//!
//! Errors before the first byte (an expression that does not parse or type-check, an archive
//! that cannot be opened or whose catalog cannot be read, the timeout) are the answer's status and JSON body. An error after
//! the first byte (the timeout, the response cap, damaged batches) ends an NDJSON answer
//! with one last line `{"error": MESSAGE}`, and aborts an Arrow answer (the chunked transfer
//! ends without its last chunk, so that the client sees a failed read).

use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::error::ApiError;
use super::limits::ServeLimits;
use super::limits::{CHUNKS_IN_FLIGHT, CHUNK_BYTES, NDJSON_ROWS_PER_WRITE};
use super::memory::Watched;
use super::state::AppState;
use crate::codec::arrow::parquet_download::ParquetDownload;
use crate::codec::writer::{writer_with, EventWriter, JsonTimestamps, OutputFormat};
use crate::query::export::{export, ExportSink, Part, Source};
use crate::query::memory::MemoryLimit;
use crate::query::{Chain, Flow, QueryError};
use crate::store::Archive;

/// The content type of an NDJSON answer.
pub const NDJSON: &str = "application/x-ndjson";
/// The content type of CSV answers.
pub const CSV: &str = "text/csv; charset=utf-8";
/// The content type of an Arrow IPC stream answer.
pub const ARROW: &str = "application/vnd.apache.arrow.stream";
/// The content type of a Parquet answer (one file, see
/// [`crate::codec::arrow::parquet_download`]).
pub const PARQUET: &str = "application/vnd.apache.parquet";

/// One query to run.
#[derive(Debug)]
pub struct QueryJob {
    /// The chain (an expression with operators, or [`Chain::all`]).
    pub chain: Chain,
    /// At most this many events.
    pub limit: Option<u64>,
    /// [`OutputFormat::Json`], [`OutputFormat::Csv`], [`OutputFormat::Arrow`] or
    /// [`OutputFormat::Parquet`] (one file, held until the query ends: see
    /// [`crate::codec::arrow::parquet_download`]).
    pub format: OutputFormat,
    /// How JSON writes times.
    pub timestamps: JsonTimestamps,
}

/// The chain of a query's text: an empty one is every event.
pub fn parse_chain(text: &str) -> Result<Chain, ApiError> {
    if text.trim().is_empty() {
        return Ok(Chain::all());
    }
    Chain::parse(text).map_err(ApiError::expr)
}

/// What the search thread hands to the connection.
enum Piece {
    Data(Bytes),
    Fail(ApiError),
}

/// Why the search thread stopped writing.
enum Stop {
    /// The client went away.
    Gone,
    Fail(ApiError),
}

fn timeout_error(state_timeout: std::time::Duration) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        format!(
            "the query ran longer than {}; narrow it down (a time range, a limit)",
            crate::duration::format_duration(state_timeout)
        ),
    )
}

/// A token cancelled at `deadline`, when the guard returned with it is dropped, or when the
/// queries pass the memory cap and this one started last ([`Watched::over`] then).
fn cancel_at(
    state: &AppState,
    deadline: tokio::time::Instant,
) -> (CancellationToken, DropGuard, Watched) {
    let token = CancellationToken::new();
    let watched = state.memory.watch(token.clone());
    let timer = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => timer.cancel(),
            _ = timer.cancelled() => {}
        }
    });
    (token.clone(), token.drop_guard(), watched)
}

/// Runs `job` and answers with its output, streamed (see the module docs).
pub async fn stream(state: &AppState, job: QueryJob) -> Result<Response, ApiError> {
    let permit = state.slot()?;
    let (tx, mut rx) = mpsc::channel::<Piece>(CHUNKS_IN_FLIGHT);
    let timeout = state.limits.query_timeout;
    let deadline = Instant::now() + timeout;
    let reader = state.reader.clone();
    let limits = state.limits;
    // A failure after the first bytes is a last JSON line in NDJSON; CSV and Arrow end cut
    // short instead (a JSON line would read as a row there).
    let ndjson = job.format == OutputFormat::Json;
    let content_type = match job.format {
        OutputFormat::Arrow => ARROW,
        OutputFormat::Csv => CSV,
        OutputFormat::Parquet => PARQUET,
        _ => NDJSON,
    };
    let deadline_at = tokio::time::Instant::from_std(deadline);
    // Cancelled at the deadline, or when this function returns an error or the answer's
    // body is dropped (the guard goes with it).
    let (cancel, guard, watched) = cancel_at(state, deadline_at);
    tokio::task::spawn_blocking(move || {
        run(&reader, &job, deadline, limits, cancel, &watched, &tx);
        drop(permit);
    });
    let deadline = deadline_at;
    let first = match tokio::time::timeout_at(deadline, rx.recv()).await {
        Err(_) => return Err(timeout_error(timeout)),
        Ok(None) => None,
        Ok(Some(Piece::Fail(e))) => return Err(e),
        Ok(Some(Piece::Data(b))) => Some(b),
    };
    let state = (first, Some(rx), guard);
    let pieces = futures::stream::unfold(state, move |(first, rx, guard)| async move {
        if let Some(b) = first {
            return Some((Ok(b), (None, rx, guard)));
        }
        let mut rx = rx?;
        let failed = match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(None) => return None,
            Ok(Some(Piece::Data(b))) => return Some((Ok(b), (None, Some(rx), guard))),
            Ok(Some(Piece::Fail(e))) => e,
            Err(_) => timeout_error(timeout),
        };
        // The last piece: an error line, or an aborted stream.
        if ndjson {
            let mut line = failed.body().to_string();
            line.push('\n');
            Some((Ok(Bytes::from(line)), (None, None, guard)))
        } else {
            let e = std::io::Error::other(failed.message);
            Some((Err(e), (None, None, guard)))
        }
    });
    Ok((
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(pieces),
    )
        .into_response())
}

/// The search thread's sink: the chain's output encoded by `writer` and sent in pieces of
/// [`CHUNK_BYTES`], at most the response cap in all.
struct Answer<'a> {
    job: &'a QueryJob,
    writer: Box<dyn EventWriter>,
    buf: Vec<u8>,
    sent: u64,
    cap: u64,
    damaged: u64,
    tx: &'a mpsc::Sender<Piece>,
    /// Why the query was cancelled, if it was (checked before each slice).
    stopped: &'a dyn Fn() -> Option<Stop>,
}

impl Answer<'_> {
    fn over_cap(&self) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the answer is larger than {} (the server's cap); ask for fewer events (limit) or fields (select)",
                crate::size::Size(self.cap),
            ),
        )
    }
}

impl ExportSink for Answer<'_> {
    type Error = Stop;

    fn write(&mut self, part: Part, take: usize) -> Result<Flow, Stop> {
        if let Some(stop) = (self.stopped)() {
            // An aggregation's partial output, after a cancelled search, is not sent.
            return Err(stop);
        }
        let step = if matches!(self.job.format, OutputFormat::Arrow | OutputFormat::Parquet) {
            take.max(1)
        } else {
            NDJSON_ROWS_PER_WRITE
        };
        let mut rows = part.rows().take(take);
        for _ in (0..take).step_by(step) {
            self.writer
                .write_rows(part.schema(), &mut rows.by_ref().take(step), &mut self.buf)
                .map_err(|e| Stop::Fail(write_error(e)))?;
            if self.sent + (self.buf.len() + self.writer.buffered_bytes()) as u64 > self.cap {
                return Err(Stop::Fail(self.over_cap()));
            }
            if self.buf.len() >= CHUNK_BYTES {
                self.sent += self.buf.len() as u64;
                if self.sent > self.cap {
                    return Err(Stop::Fail(self.over_cap()));
                }
                let piece = Piece::Data(Bytes::from(std::mem::take(&mut self.buf)));
                if self.tx.blocking_send(piece).is_err() {
                    return Err(Stop::Gone);
                }
            }
        }
        Ok(Flow::More)
    }

    fn damaged(&mut self, error: QueryError) {
        if matches!(error, QueryError::Cancelled) {
            return;
        }
        tracing::warn!("query {:?}: {error}", self.job.chain.text());
        self.damaged += 1;
    }
}

/// The answer's error for a writer that failed: a batch that one output cannot hold (a
/// Parquet column of two types) is the query's fault (`422`), anything else the server's.
fn write_error(e: crate::codec::event_writer::WriteError) -> ApiError {
    let status = match e {
        crate::codec::event_writer::WriteError::Column { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, e.to_string())
}

/// The writer of an answer in `format`.
fn answer_writer(format: OutputFormat, timestamps: JsonTimestamps) -> Box<dyn EventWriter> {
    match format {
        OutputFormat::Parquet => Box::new(ParquetDownload::new()),
        _ => writer_with(format, timestamps),
    }
}

/// The search thread: runs the chain and sends its output (see the module docs).
fn run(
    reader: &crate::Db,
    job: &QueryJob,
    deadline: Instant,
    limits: ServeLimits,
    cancel: CancellationToken,
    watched: &Watched,
    tx: &mpsc::Sender<Piece>,
) {
    let (cap, timeout) = (limits.max_response_bytes, limits.query_timeout);
    let fail = |e: ApiError| {
        let _ = tx.blocking_send(Piece::Fail(e));
    };
    let mut archive = match reader.handle() {
        Ok(a) => a,
        Err(e) => {
            return fail(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                e.to_string(),
            ))
        }
    };
    archive.cancel_on(cancel.clone());
    // Cancelled: for memory, at the deadline a timeout, else the client went away.
    let why = || {
        if watched.over() {
            Stop::Fail(watched.error())
        } else if Instant::now() >= deadline {
            Stop::Fail(timeout_error(timeout))
        } else {
            Stop::Gone
        }
    };
    let stopped = || (cancel.is_cancelled() || Instant::now() >= deadline).then(why);
    let mut answer = Answer {
        job,
        writer: answer_writer(job.format, job.timestamps),
        buf: Vec::with_capacity(CHUNK_BYTES * 2),
        sent: 0,
        cap,
        damaged: 0,
        tx,
        stopped: &stopped,
    };
    let result = export(&archive, Source::Chain(&job.chain), job.limit, &mut answer);
    if cancel.is_cancelled() {
        if let Stop::Fail(e) = why() {
            fail(e);
        }
        return;
    }
    match result {
        Err(e) => fail(ApiError::query(e)),
        Ok((_, Some(Stop::Gone))) => {}
        Ok((_, Some(Stop::Fail(e)))) => fail(e),
        Ok((_, None)) => {
            let mut buf = std::mem::take(&mut answer.buf);
            if let Err(e) = answer.writer.try_finish(&mut buf) {
                return fail(write_error(e));
            }
            answer.sent += buf.len() as u64;
            if answer.sent > cap {
                return fail(answer.over_cap());
            }
            if !buf.is_empty() && tx.blocking_send(Piece::Data(Bytes::from(buf))).is_err() {
                return;
            }
            if answer.damaged > 0 {
                fail(damaged_error(answer.damaged));
            }
        }
    }
}

/// The error of a run that skipped `damaged` batches (the CLI's words).
fn damaged_error(damaged: u64) -> ApiError {
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!(
            "skipped {} damaged {}; the results leave them out",
            damaged,
            if damaged == 1 { "batch" } else { "batches" },
        ),
    )
}

/// Runs `f` on a blocking thread with a query slot, within the query timeout, on a handle of
/// the resident reader (cancelled at the timeout).
pub async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce(Archive) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let permit = state.slot()?;
    let reader = state.reader.clone();
    let deadline = tokio::time::Instant::now() + state.limits.query_timeout;
    // Cancelled at the deadline, for memory, or when this future is dropped (its client
    // went away).
    let (cancel, _guard, watched) = cancel_at(state, deadline);
    let task = tokio::task::spawn_blocking(move || {
        let out = reader
            .handle()
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
            .and_then(|mut archive| {
                archive.cancel_on(cancel);
                f(archive)
            });
        drop(permit);
        out
    });
    let answer = tokio::time::timeout_at(deadline, task).await;
    if watched.over() {
        return Err(watched.error());
    }
    match answer {
        Err(_) => Err(timeout_error(state.limits.query_timeout)),
        Ok(Err(_)) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the query's thread failed",
        )),
        Ok(Ok(r)) => r,
    }
}

/// `"explain": true`: the chain's plan and the pruning it will do over `archive`, without
/// running it: `{"plan": ..., "pruning": ..., "warnings": [...], "text": "..."}` (`text`: as
/// `weir export --explain` prints it; the rest as `Explain::to_json` writes it).
pub fn explain(archive: &Archive, chain: &Chain) -> Result<serde_json::Value, ApiError> {
    let explained = chain.explain(archive).map_err(ApiError::query)?;
    let mut out = explained.to_json();
    out["text"] = serde_json::Value::String(explained.to_string());
    Ok(out)
}

/// The number of events of `text`, as `weir count` counts them: from the catalog and batch
/// metadata for an expression, the events that come out for a chain with operators (within
/// the default memory budget).
pub fn count(archive: &Archive, text: &str) -> Result<u64, ApiError> {
    count_within(archive, text, MemoryLimit::default())
}

/// [`count`], a chain's operators holding at most `memory`.
pub fn count_within(archive: &Archive, text: &str, memory: MemoryLimit) -> Result<u64, ApiError> {
    crate::db::count(archive, text, memory).map_err(ApiError::query)
}

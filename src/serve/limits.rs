//! The limits of `weir serve`, each a constant here and a field of [`ServeLimits`] that the
//! command line overrides (`--max-queries`, `--query-timeout`, `--max-response`,
//! `--max-query-memory`, `--ingest-reserve`).
//!
//! - At most [`MAX_QUERIES`] queries (`/api/v1/query`, `count`, `get`) run at once; one more
//!   is answered `503` with a JSON error at once, never queued. Queries run on tokio's
//!   blocking threads, so that the pipelines' tasks never wait for them.
//! - A query has [`QUERY_TIMEOUT`]: a query that has not produced its first bytes by then is
//!   answered `504`; a streamed answer that is still running then ends with an error (see
//!   [`crate::serve::query`]). The search stops then at its next batch, also one that has
//!   emitted nothing yet (an aggregation, a search with few hits), and frees its slot.
//! - An answer is at most [`MAX_RESPONSE_BYTES`]: the stream ends there with an error.
//! - One query's operators hold at most [`query_memory`] (`--query-memory`, the query's
//!   memory budget, see [`crate::query::memory`]): past it the query fails with `422` and an
//!   error naming the operator; the server goes on.
//! - The running queries together take at most [`MAX_QUERY_MEMORY`] of memory beyond
//!   [`INGEST_RESERVE`], the pipelines' (`--max-query-memory`, see [`crate::serve::memory`]).
//! - A request body is at most [`MAX_BODY_BYTES`] (`413`), one of the intel API's writes
//!   [`MAX_INTEL_BODY_BYTES`], a `get` at most [`MAX_GET_IDS`] IDs.
//! - Connections: at most [`MAX_CONNECTIONS`] at once, many more than query slots, so that
//!   clients that connect and send nothing (or trickle) cannot take every connection. A
//!   connection must send each request head within [`HEADER_TIMEOUT`] and at most
//!   [`MAX_HEAD_BYTES`] (see [`crate::http_server`]): the clock runs from the connection's
//!   start and again after each answer, so an idle connection, new or kept alive, is closed
//!   after [`HEADER_TIMEOUT`]. A request body must arrive whole within [`BODY_TIMEOUT`], else
//!   it is answered `408` and the connection is closed ([`crate::serve::guard`]).

use std::time::Duration;

/// Most queries running at once.
pub const MAX_QUERIES: usize = 4;
/// Longest time a query may run.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest answer of a query, in bytes.
pub const MAX_RESPONSE_BYTES: u64 = 256 << 20;
/// Largest request body.
pub const MAX_BODY_BYTES: usize = 64 << 10;
/// Largest request body of the intel API's writes (`POST /api/v1/intel/NAME`: a feed's text).
pub const MAX_INTEL_BODY_BYTES: usize = 64 << 20;
/// Most IDs in one `get`.
pub const MAX_GET_IDS: usize = 10_000;
/// Most connections served at once: a connection costs a task and a few KiB, a query slot
/// a thread and its memory, so there are many more of these than of those.
pub const MAX_CONNECTIONS: usize = 512;
/// Longest time a client may take to send a request head, counted from the connection's
/// start or the end of its last answer: an idle connection is closed then.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest time a client may take to send a request body (`408` then).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head.
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// A streamed answer is handed to the connection in pieces of about this size.
pub const CHUNK_BYTES: usize = 64 << 10;
/// NDJSON answers are encoded this many events at a time, so that pieces stay near
/// [`CHUNK_BYTES`] and the response cap is checked often (an Arrow answer is encoded a slice
/// at a time, one record batch each, as `weir export --to arrow` writes it).
pub const NDJSON_ROWS_PER_WRITE: usize = 256;
/// Pieces of an answer waiting for a slow client, per query (then the search waits).
pub const CHUNKS_IN_FLIGHT: usize = 4;
/// The memory all running queries of a server may take together, by default
/// (`--max-query-memory`; see [`crate::serve::memory`]).
pub const MAX_QUERY_MEMORY: u64 = 2 << 30;
/// The memory kept for the ingest of the pipelines that run beside the server: queries are
/// stopped before the process holds more than this plus `--max-query-memory`
/// (`--ingest-reserve`).
pub const INGEST_RESERVE: u64 = 512 << 20;
/// The memory budget of one query by default (`--query-memory`): the machine's default
/// ([`crate::query::memory::default_query_memory`]), but no more than a share of
/// [`MAX_QUERY_MEMORY`] such that [`MAX_QUERIES`] queries at their budgets fit in it.
pub fn query_memory() -> u64 {
    crate::query::memory::default_query_memory().min(MAX_QUERY_MEMORY / MAX_QUERIES as u64)
}

/// How often the process's memory is sampled while a query runs.
pub const MEMORY_POLL: Duration = Duration::from_millis(10);

/// The limits of one server (the constants above unless overridden).
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// Most queries running at once ([`MAX_QUERIES`]).
    pub max_queries: usize,
    /// Longest time a query may run ([`QUERY_TIMEOUT`]).
    pub query_timeout: Duration,
    /// Largest answer of a query ([`MAX_RESPONSE_BYTES`]).
    pub max_response_bytes: u64,
    /// The memory all running queries may take together ([`MAX_QUERY_MEMORY`]).
    pub max_query_memory: u64,
    /// The memory kept for the pipelines' ingest ([`INGEST_RESERVE`]).
    pub ingest_reserve: u64,
    /// The memory budget of one query's operators ([`query_memory`]).
    pub query_memory: u64,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            max_queries: MAX_QUERIES,
            query_timeout: QUERY_TIMEOUT,
            max_response_bytes: MAX_RESPONSE_BYTES,
            max_query_memory: MAX_QUERY_MEMORY,
            ingest_reserve: INGEST_RESERVE,
            query_memory: query_memory(),
        }
    }
}

impl ServeLimits {
    /// The memory limit of each query's chain.
    pub fn query_memory_limit(&self) -> crate::query::memory::MemoryLimit {
        crate::query::memory::MemoryLimit {
            bytes: self.query_memory,
            option: "--query-memory",
        }
    }

    /// The connection limits of the server ([`crate::http_server::Limits`]).
    pub fn connections(&self) -> crate::http_server::Limits {
        crate::http_server::Limits {
            max_connections: MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
            max_head_bytes: MAX_HEAD_BYTES,
            keep_alive: true,
        }
    }
}

//! The memory of `weir serve`: its queries together may not take the memory that the
//! pipelines beside them ingest with (`--max-query-memory`).
//!
//! # The rule
//!
//! The process may hold at most `--ingest-reserve` (default
//! [`super::limits::INGEST_RESERVE`]) plus `--max-query-memory` (default
//! [`super::limits::MAX_QUERY_MEMORY`]) of anonymous memory while queries run: the reserve is the ingest's
//! (batches in flight, the segment builder's buffers), the rest is what all running queries
//! share. The measure is the process's anonymous resident memory (`RssAnon` of
//! `/proc/self/status`), so the archive's mapped segments, which the kernel can drop and read
//! again, do not count. It is sampled every [`MEMORY_POLL`] while a query runs.
//!
//! When a sample passes the limit and is above every sample since the last time a query was
//! stopped for memory (the memory is still growing), the query started last is cancelled:
//! it stops at its next batch, as at its timeout, frees what it holds, and is answered `503`
//! with an error that names the cap. Memory that the allocator keeps after a query ends is
//! reused by the next ones without growing the process, so it stops no query by itself: the
//! level at which no query runs, or at the last stop, is the bar a sample must pass.
//!
//! Off Linux (no `/proc/self/status`) there is no cap; the per-operator caps of the engine
//! (sort, groups) still hold.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::limits::MEMORY_POLL;

/// The running queries' share of a server's memory; see the module docs.
#[derive(Debug)]
pub struct QueryMemory {
    /// The most anonymous memory the process may hold while queries run.
    limit: u64,
    /// `--max-query-memory`, for the messages.
    cap: u64,
    /// `--ingest-reserve`, for the messages.
    reserve: u64,
    running: Mutex<Vec<Entry>>,
    next: AtomicU64,
    /// Wakes the sampler when a query starts.
    started: Notify,
    sampler: AtomicBool,
}

#[derive(Debug)]
struct Entry {
    seq: u64,
    token: CancellationToken,
    over: Arc<AtomicBool>,
}

/// A query that [`QueryMemory`] watches until this is dropped.
#[derive(Debug)]
pub struct Watched {
    memory: Arc<QueryMemory>,
    seq: u64,
    over: Arc<AtomicBool>,
}

impl Watched {
    /// Whether the query was stopped because the queries passed the memory cap.
    pub fn over(&self) -> bool {
        self.over.load(Ordering::Acquire)
    }

    /// The answer of a query stopped for memory.
    pub fn error(&self) -> ApiError {
        self.memory.error()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(mut running) = self.memory.running.lock() {
            running.retain(|e| e.seq != self.seq);
        }
    }
}

impl QueryMemory {
    /// The memory of a server whose queries may take `cap` bytes together beyond `reserve`
    /// for the ingest.
    pub fn new(cap: u64, reserve: u64) -> Arc<QueryMemory> {
        Arc::new(QueryMemory {
            limit: reserve.saturating_add(cap),
            reserve,
            cap,
            running: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
            started: Notify::new(),
            sampler: AtomicBool::new(false),
        })
    }

    /// Watches the query cancelled by `token` (a query started now): it is cancelled when the
    /// queries pass the cap and it is the one started last. Must be called within tokio's
    /// runtime (the first call starts the sampler there).
    pub fn watch(self: &Arc<Self>, token: CancellationToken) -> Watched {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let over = Arc::new(AtomicBool::new(false));
        if let Ok(mut running) = self.running.lock() {
            running.push(Entry {
                seq,
                token,
                over: over.clone(),
            });
        }
        if !self.sampler.swap(true, Ordering::AcqRel) && anon_rss().is_some() {
            tokio::spawn(sample(Arc::downgrade(self)));
        }
        self.started.notify_one();
        Watched {
            memory: self.clone(),
            seq,
            over,
        }
    }

    /// The answer of a query stopped for memory.
    pub fn error(&self) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the queries running now needed more memory than the server gives them ({}, --max-query-memory); narrow this one down (a time range, fewer groups or distinct values) or try again later",
                crate::size::Size(self.cap)
            ),
        )
    }

    /// One sample at `rss` bytes against the bar; returns the new bar. Cancels the query
    /// started last when `rss` passes both the limit and the bar.
    fn judge(&self, rss: u64, bar: u64) -> u64 {
        let Ok(running) = self.running.lock() else {
            return bar;
        };
        if running.is_empty() {
            // What the process holds with no query running is the ingest's and the
            // allocator's: a query must grow past it to be stopped.
            return rss;
        }
        if rss <= self.limit || rss <= bar {
            return bar;
        }
        let newest = running
            .iter()
            .filter(|e| !e.token.is_cancelled())
            .max_by_key(|e| e.seq);
        if let Some(e) = newest {
            e.over.store(true, Ordering::Release);
            e.token.cancel();
            tracing::warn!(
                "a query was stopped: the process holds {} of memory, above the ingest's reserve and --max-query-memory ({} + {})",
                crate::size::Size(rss),
                crate::size::Size(self.reserve),
                crate::size::Size(self.cap)
            );
        }
        rss
    }
}

/// The sampler: while queries run, every [`MEMORY_POLL`]; ends with the server.
async fn sample(memory: std::sync::Weak<QueryMemory>) {
    let mut bar = 0;
    loop {
        let Some(m) = memory.upgrade() else { return };
        let idle = m.running.lock().map(|r| r.is_empty()).unwrap_or(true);
        if idle {
            // Wait for a query (or look again after a while, to notice the server's end; a
            // query that started since the look left a permit in `started`).
            let _ = tokio::time::timeout(Duration::from_secs(1), m.started.notified()).await;
            continue;
        }
        let Some(rss) = anon_rss() else { return };
        bar = m.judge(rss, bar);
        drop(m);
        tokio::time::sleep(MEMORY_POLL).await;
    }
}

/// The process's anonymous resident memory in bytes (`None` where the kernel does not say).
pub fn anon_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    rss_anon_of(&status)
}

/// `RssAnon` of a `/proc/PID/status` text, in bytes.
fn rss_anon_of(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line
        .trim_start_matches("RssAnon:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::limits::INGEST_RESERVE;

    #[test]
    fn reads_rss_anon_in_bytes() {
        let status =
            "Name:\tweir\nVmRSS:\t  20480 kB\nRssAnon:\t    6144 kB\nRssFile:\t 14336 kB\n";
        assert_eq!(rss_anon_of(status), Some(6144 * 1024));
        assert_eq!(rss_anon_of("Name:\tweir\n"), None);
    }

    #[tokio::test]
    async fn the_query_started_last_is_stopped_once_memory_grows_past_the_limit() {
        let m = QueryMemory::new(100 << 20, INGEST_RESERVE);
        let limit = INGEST_RESERVE + (100 << 20);
        // Idle: the bar follows the process.
        assert_eq!(m.judge(limit + 50, 0), limit + 50);
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        let wa = m.watch(a.clone());
        let wb = m.watch(b.clone());
        // Above the limit but not above the bar (memory kept from before): nothing stops.
        let bar = m.judge(limit + 10, limit + 50);
        assert_eq!(bar, limit + 50);
        assert!(!a.is_cancelled() && !b.is_cancelled());
        // Growing past both: the newest stops, and says why.
        let bar = m.judge(limit + 60, bar);
        assert!(b.is_cancelled() && wb.over());
        assert!(!a.is_cancelled() && !wa.over());
        assert!(wb.error().message.contains("--max-query-memory"));
        // Still above, but no higher: the stopped one is freeing its memory.
        let bar = m.judge(limit + 55, bar);
        assert!(!a.is_cancelled());
        // Higher again: the next newest.
        m.judge(limit + 70, bar);
        assert!(a.is_cancelled() && wa.over());
        drop((wa, wb));
        assert!(m.running.lock().unwrap().is_empty());
        // Below the limit nothing is stopped however it grows.
        let c = CancellationToken::new();
        let _wc = m.watch(c.clone());
        m.judge(limit - 1, 0);
        assert!(!c.is_cancelled());
    }
}

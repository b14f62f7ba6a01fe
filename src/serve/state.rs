//! What every handler of `weir serve` shares: the archive directory and its resident reader,
//! the limits and their query slots, and the pipelines' live reports.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;
use super::limits::ServeLimits;
use super::memory::QueryMemory;
use super::status::PipelineStatus;

/// The state of the router.
#[derive(Clone)]
pub struct AppState {
    /// The archive directory served.
    pub db: PathBuf,
    /// Its one resident [`crate::Db`], shared by the queries (segment cache warm, refreshed
    /// on commit).
    pub reader: crate::Db,
    /// The limits.
    pub limits: ServeLimits,
    /// One permit per query that may run.
    slots: Arc<Semaphore>,
    /// Queries started (slots taken) since the server started.
    started: Arc<AtomicU64>,
    /// The pipelines run beside the server.
    pub pipelines: Arc<[Arc<PipelineStatus>]>,
    /// The running queries' share of memory.
    pub memory: Arc<QueryMemory>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("db", &self.db)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The state of a server of `db` with `limits`, beside `pipelines`.
    ///
    /// Called on a tokio runtime, it starts the reader's periodic check there
    /// (the `Db`'s refresh in the background).
    pub fn new(db: PathBuf, limits: ServeLimits, pipelines: Vec<Arc<PipelineStatus>>) -> AppState {
        let reader = crate::Db::lazy(db.clone());
        reader.refresh_in_background();
        AppState {
            db,
            reader,
            limits,
            slots: Arc::new(Semaphore::new(limits.max_queries)),
            started: Arc::new(AtomicU64::new(0)),
            pipelines: pipelines.into(),
            memory: QueryMemory::new(limits.max_query_memory, limits.ingest_reserve),
        }
    }

    /// A query slot, or `503` when all are taken.
    pub fn slot(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        let permit = self.slots.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many queries: at most {} run at once; try again later",
                    self.limits.max_queries
                ),
            )
        })?;
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(permit)
    }

    /// Queries started since the server started.
    pub fn queries_started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Queries running now.
    pub fn queries_running(&self) -> usize {
        self.limits
            .max_queries
            .saturating_sub(self.slots.available_permits())
    }
}

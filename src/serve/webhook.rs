//! `weir serve --webhook URL`: every new sighting POSTed to a URL, at least once.
//!
//! The archive is the queue: the webhook task reads the sightings after its cursor (at most
//! [`WEBHOOK_BATCH`] at a time, through the server's resident reader) and POSTs each, in ID
//! order, as its JSON object ([`crate::detect::read`]) with the header
//! `X-Weir-Sighting-Id: ID`, for the receiver to drop a sighting it already has. Ingest never
//! waits for it and its memory is one batch, however slow or dead the receiver is.
//!
//! A POST that fails (no connection, a timeout of [`WEBHOOK_TIMEOUT`], a status other than
//! 2xx) is sent again after a pause that doubles from [`WEBHOOK_RETRY_FIRST`] up to
//! [`WEBHOOK_RETRY_MAX`], until it succeeds: the sightings after it wait, so they arrive in
//! order. After each batch the cursor, the last ID delivered, is written atomically to
//! `DIR/webhook-cursor.json` (`{"url": URL, "after": ID}`), so a restarted server goes on
//! from there; a crash between a delivery and the cursor's write sends those sightings again
//! (at least once). Without a cursor for this URL, delivery starts with the sightings
//! committed after the server started.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::detect::read::{newest_sighting_id, sightings_after, SightingJson};

/// Sightings read and delivered between two writes of the cursor.
pub const WEBHOOK_BATCH: usize = 100;
/// How long one POST may take.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The first pause before a failed POST is sent again.
pub const WEBHOOK_RETRY_FIRST: Duration = Duration::from_millis(200);
/// The longest pause between two tries.
pub const WEBHOOK_RETRY_MAX: Duration = Duration::from_secs(30);
/// How often the archive is checked for new sightings when all are delivered.
pub const WEBHOOK_POLL: Duration = super::sightings::SIGHTINGS_POLL;
/// The cursor's file in the archive directory.
pub const WEBHOOK_CURSOR: &str = "webhook-cursor.json";

/// The cursor file.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Cursor {
    url: String,
    after: u64,
}

fn read_cursor(db: &Path, url: &str) -> Option<u64> {
    let bytes = std::fs::read(db.join(WEBHOOK_CURSOR)).ok()?;
    let c: Cursor = serde_json::from_slice(&bytes).ok()?;
    (c.url == url).then_some(c.after)
}

fn write_cursor(db: &Path, url: &str, after: u64) {
    let c = Cursor {
        url: url.to_string(),
        after,
    };
    let r = serde_json::to_vec(&c)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            crate::fs::write_atomic(db, WEBHOOK_CURSOR, &b, true).map_err(|e| e.to_string())
        });
    if let Err(e) = r {
        tracing::warn!(url, "cannot write the webhook's cursor: {e}");
    }
}

/// The webhook's deliveries so far.
#[derive(Debug, Default)]
pub struct WebhookStats {
    /// Sightings delivered (2xx).
    pub delivered: std::sync::atomic::AtomicU64,
    /// POSTs that failed and were retried.
    pub failures: std::sync::atomic::AtomicU64,
}

/// Where delivery to `url` starts: after its cursor, or (a new URL) after the newest sighting
/// now. Blocking; called before the server starts, so that "committed after the server
/// started" is exact.
pub fn start_after(reader: &crate::Db, db: &Path, url: &str) -> Option<u64> {
    read_cursor(db, url).or_else(|| {
        reader
            .handle()
            .ok()
            .and_then(|a| newest_sighting_id(&a).ok().flatten())
    })
}

/// Delivers the sightings after `start` of the archive `reader` reads (directory `db`) to `url` until
/// `stop` (see the module docs).
pub async fn run(
    reader: crate::Db,
    db: PathBuf,
    url: String,
    start: Option<u64>,
    stats: std::sync::Arc<WebhookStats>,
    stop: CancellationToken,
) {
    crate::object::install_tls_provider();
    let client = match reqwest::Client::builder().timeout(WEBHOOK_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(url, "the webhook cannot start: {e}");
            return;
        }
    };
    let read = |after: Option<u64>| {
        let reader = reader.clone();
        async move {
            tokio::task::spawn_blocking(move || -> Result<Vec<SightingJson>, String> {
                let archive = reader.handle().map_err(|e| e.to_string())?;
                sightings_after(&archive, after, WEBHOOK_BATCH).map_err(|e| e.to_string())
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
        }
    };
    let mut after = start;
    tracing::info!(url, after, "webhook started");
    loop {
        let list = match read(after).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(url, "the webhook cannot read sightings: {e}");
                Vec::new()
            }
        };
        for (id, json) in &list {
            let mut pause = WEBHOOK_RETRY_FIRST;
            loop {
                let sent = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-weir-sighting-id", id.to_string())
                    .body(json.to_string())
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().is_success() => break,
                    Ok(r) => {
                        tracing::warn!(url, id, status = %r.status(), "webhook refused a sighting; retrying")
                    }
                    Err(e) => tracing::warn!(url, id, "webhook unreachable: {e}; retrying"),
                }
                stats
                    .failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(WEBHOOK_RETRY_MAX);
            }
            stats
                .delivered
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            after = Some(*id);
        }
        if let Some(a) = list.last().map(|(id, _)| *id) {
            let (db, url) = (db.clone(), url.clone());
            let _ = tokio::task::spawn_blocking(move || write_cursor(&db, &url, a)).await;
        }
        if list.len() < WEBHOOK_BATCH {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(WEBHOOK_POLL) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_belongs_to_its_url() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_cursor(dir.path(), "http://a/"), None);
        write_cursor(dir.path(), "http://a/", 42);
        assert_eq!(read_cursor(dir.path(), "http://a/"), Some(42));
        assert_eq!(
            read_cursor(dir.path(), "http://b/"),
            None,
            "another URL starts anew"
        );
    }
}

//! `GET /api/v1/sightings`: the archive's `weir.sighting` events (see [`crate::detect`]), as
//! NDJSON, one sighting a line, each with its own event ID as `id`
//! ([`crate::detect::read`]).
//!
//! | parameters | answer |
//! | --- | --- |
//! | none, or `limit=N` | the newest N (default [`SIGHTINGS_PAGE`]) sightings, newest first: the page's panel |
//! | `after=ID[&limit=N]` | the sightings after ID, oldest first, at most N |
//! | `follow=true[&after=ID]` | a stream that does not end: the sightings after ID (without it: those committed from now on), oldest first, then each new one as it is committed (checked every [`SIGHTINGS_POLL`]) |
//!
//! A client that loses a follow stream reconnects with `after=` the last `id` it read, and
//! gets every sighting after it, none twice. A follow stream holds no query slot: each check
//! takes one for its moment (when all are taken, it waits for the next check), so any number
//! of clients can follow. It ends when the client goes away.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::query::{self, NDJSON};
use super::state::AppState;
use crate::detect::read::{newest_sighting_id, newest_sightings, sightings_after, SightingJson};

/// Sightings of one answer without `limit` (and the most a follow stream reads per check).
pub const SIGHTINGS_PAGE: usize = 100;
/// The most sightings of one answer (`limit`).
pub const MAX_SIGHTINGS_PAGE: usize = 10_000;
/// How often a follow stream checks for new sightings.
pub const SIGHTINGS_POLL: Duration = Duration::from_millis(250);

/// The parameters of a request.
#[derive(Debug, Default, PartialEq, Eq)]
struct Params {
    after: Option<u64>,
    limit: usize,
    follow: bool,
}

fn params(raw: Option<&str>) -> Result<Params, ApiError> {
    let mut p = Params {
        limit: SIGHTINGS_PAGE,
        ..Params::default()
    };
    for pair in raw.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || ApiError::bad_request(format!("bad parameter {pair:?}"));
        match k {
            "after" => p.after = Some(v.parse().map_err(|_| bad())?),
            "limit" => {
                p.limit = v.parse().map_err(|_| bad())?;
                if p.limit == 0 || p.limit > MAX_SIGHTINGS_PAGE {
                    return Err(ApiError::bad_request(format!(
                        "limit must be 1 to {MAX_SIGHTINGS_PAGE}"
                    )));
                }
            }
            "follow" => {
                p.follow = match v {
                    "true" | "1" | "" => true,
                    "false" | "0" => false,
                    _ => return Err(bad()),
                }
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {k:?}: expected after, limit or follow"
                )))
            }
        }
    }
    Ok(p)
}

/// The NDJSON of `list`.
fn ndjson(list: &[SightingJson]) -> Vec<u8> {
    let mut out = Vec::new();
    for (_, v) in list {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// `GET /api/v1/sightings` (see the module docs).
pub async fn sightings(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let p = params(raw.as_deref())?;
    if !p.follow {
        let (after, limit) = (p.after, p.limit);
        let list = query::blocking(&state, move |archive| match after {
            None => newest_sightings(&archive, limit).map_err(internal),
            Some(a) => sightings_after(&archive, Some(a), limit).map_err(internal),
        })
        .await?;
        return Ok(([(header::CONTENT_TYPE, NDJSON)], ndjson(&list)).into_response());
    }
    // Where the stream starts: after the given ID, or after the newest sighting now.
    let start = match p.after {
        Some(a) => Some(a),
        None => {
            query::blocking(&state, |archive| {
                newest_sighting_id(&archive).map_err(internal)
            })
            .await?
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(2);
    let limit = p.limit;
    tokio::spawn(async move {
        let mut after = start;
        loop {
            let got = query::blocking(&state, move |archive| {
                sightings_after(&archive, after, limit).map_err(internal)
            })
            .await;
            // A busy server (every slot taken) or a failed read: the next check tries again.
            let list = got.unwrap_or_default();
            if let Some((last, _)) = list.last() {
                after = Some(*last);
                if tx.send(Bytes::from(ndjson(&list))).await.is_err() {
                    return;
                }
            }
            if list.len() < limit {
                tokio::select! {
                    _ = tx.closed() => return,
                    _ = tokio::time::sleep(SIGHTINGS_POLL) => {}
                }
            }
        }
    });
    let body = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    Ok((
        [
            (header::CONTENT_TYPE, NDJSON),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert_eq!(params(None).unwrap().limit, SIGHTINGS_PAGE);
        let p = params(Some("after=7&limit=3&follow=true")).unwrap();
        assert_eq!(
            p,
            Params {
                after: Some(7),
                limit: 3,
                follow: true
            }
        );
        for bad in [
            "after=x",
            "limit=0",
            "limit=10001",
            "follow=maybe",
            "since=1",
        ] {
            assert!(params(Some(bad)).is_err(), "{bad}");
        }
    }
}

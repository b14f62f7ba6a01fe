//! The intel API: the archive's indicator sets ([`crate::intel`]) over HTTP.
//!
//! | endpoint | request | answer |
//! | --- | --- | --- |
//! | `GET /api/v1/intel` | — | `{"sets": [{"name", "version", "indicators", "types": {TYPE: N}}]}` |
//! | `GET /api/v1/intel/NAME` | — | the set's indicators as NDJSON (as `weir intel show`), `404` without the set |
//! | `POST /api/v1/intel/NAME` | `{"text": FEED, "format": "zeek"\|"csv"\|"list"\|"stix", "type": TYPE, "expire": "30d", "on_error": "fail"\|"skip"}` (`text` required) | adds the feed's indicators as `weir intel add` does: `{"added", "updated", "unchanged", "indicators", "version", "skipped": [...], "unsupported": [...]}`; a bad line is `400` naming it (nothing is stored) |
//! | `POST /api/v1/intel/NAME/remove` | `{"values": [VALUE, ...]}` | `{"removed": N, "indicators", "version"}` |
//! | `DELETE /api/v1/intel/NAME` | — | `{"deleted": true\|false}` |
//!
//! The writes are the only requests that change anything in the archive directory, and they
//! need the bearer token: a server without one (loopback without `--token-file`) refuses them
//! (`403`), so no web page can reach them through a browser. Their bodies may be up to
//! [`MAX_INTEL_BODY_BYTES`]. A set changed here is matched by the running pipelines from their
//! next commit on ([`crate::detect`]), and against the archive's past in the background: by
//! the writer of a pipeline that fills the archive, or, when none does, by the server's
//! [`crate::detect::IdleRetro`].
//!
//! [`MAX_INTEL_BODY_BYTES`]: super::limits::MAX_INTEL_BODY_BYTES

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::api::body;
use super::error::ApiError;
use super::query::NDJSON;
use super::state::AppState;
use crate::error::OnError;
use crate::intel::{
    read_indicators, IndicatorSet, IndicatorType, IntelError, IntelFormat, ReadOptions,
};

/// `POST /api/v1/intel/NAME`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddRequest {
    text: String,
    format: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    expire: Option<String>,
    on_error: Option<String>,
}

/// `POST /api/v1/intel/NAME/remove`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveRequest {
    values: Vec<String>,
}

fn intel_error(e: IntelError) -> ApiError {
    match e {
        IntelError::Input { .. } | IntelError::NoType { .. } | IntelError::SetName { .. } => {
            ApiError::bad_request(e.to_string())
        }
        e => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Runs `f` on a blocking thread (set files are read and fsynced).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request's thread failed",
        )
    })?
}

/// `GET /api/v1/intel`.
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let db = state.db.clone();
    let sets = blocking(move || {
        let mut out = Vec::new();
        for name in IndicatorSet::names(&db).map_err(intel_error)? {
            let Some(set) = IndicatorSet::load(&db, &name).map_err(intel_error)? else {
                continue;
            };
            let mut types: BTreeMap<&str, u64> = BTreeMap::new();
            for i in set.indicators() {
                *types.entry(i.kind.name()).or_default() += 1;
            }
            out.push(json!({
                "name": name, "version": set.version(), "indicators": set.len(), "types": types,
            }));
        }
        Ok(out)
    })
    .await?;
    Ok(Json(json!({ "sets": sets })))
}

fn no_set(name: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("no indicator set {name:?}"))
}

/// `GET /api/v1/intel/NAME`.
pub async fn show(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let db = state.db.clone();
    let out = blocking(move || {
        let set = IndicatorSet::load(&db, &name)
            .map_err(intel_error)?
            .ok_or_else(|| no_set(&name))?;
        let mut out = Vec::new();
        for i in set.indicators() {
            serde_json::to_writer(&mut out, &i)
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
            out.push(b'\n');
        }
        Ok(out)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, NDJSON)], out).into_response())
}

/// `POST /api/v1/intel/NAME`.
pub async fn add(
    State(state): State<AppState>,
    Path(name): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let req: AddRequest = body(raw)?;
    let format = match req.format.as_deref() {
        None => None,
        Some(f) => Some(IntelFormat::from_name(f).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown format {f:?}: expected zeek, csv, list or stix"
            ))
        })?),
    };
    let kind = match req.kind.as_deref() {
        None => None,
        Some(t) => Some(
            IndicatorType::from_name(t)
                .ok_or_else(|| ApiError::bad_request(format!("unknown indicator type {t:?}")))?,
        ),
    };
    let on_error = match req.on_error.as_deref() {
        None | Some("fail") => OnError::Fail,
        Some("skip") => OnError::Skip,
        Some(o) => {
            return Err(ApiError::bad_request(format!(
                "unknown on_error {o:?}: expected fail or skip"
            )))
        }
    };
    let valid_until = match req.expire.as_deref() {
        None => None,
        Some(d) => {
            let d = crate::duration::parse_period(d)
                .map_err(|e| ApiError::bad_request(format!("expire: {e}")))?;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |t| i64::try_from(t.as_nanos()).unwrap_or(i64::MAX));
            Some(now.saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)))
        }
    };
    let db = state.db.clone();
    let answer = blocking(move || {
        let options = ReadOptions {
            format,
            kind,
            on_error,
            valid_until,
        };
        let report = read_indicators(&req.text, "request", &options).map_err(intel_error)?;
        let mut set = match IndicatorSet::load(&db, &name).map_err(intel_error)? {
            Some(s) => s,
            None => IndicatorSet::new(&name).map_err(intel_error)?,
        };
        let r = set.add(report.indicators);
        if r.added + r.updated > 0 || set.version() == 0 {
            set.store(&db, true).map_err(intel_error)?;
        }
        Ok(json!({
            "added": r.added, "updated": r.updated, "unchanged": r.unchanged,
            "indicators": set.len(), "version": set.version(),
            "skipped": report.skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "unsupported": report.unsupported,
        }))
    })
    .await?;
    Ok(Json(answer))
}

/// `POST /api/v1/intel/NAME/remove`.
pub async fn remove(
    State(state): State<AppState>,
    Path(name): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let req: RemoveRequest = body(raw)?;
    let db = state.db.clone();
    let answer = blocking(move || {
        let mut set = IndicatorSet::load(&db, &name)
            .map_err(intel_error)?
            .ok_or_else(|| no_set(&name))?;
        let removed = set.remove_values(req.values.iter().map(String::as_str));
        if removed > 0 {
            set.store(&db, true).map_err(intel_error)?;
        }
        Ok(json!({ "removed": removed, "indicators": set.len(), "version": set.version() }))
    })
    .await?;
    Ok(Json(answer))
}

/// `DELETE /api/v1/intel/NAME`.
pub async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let db = state.db.clone();
    let deleted =
        blocking(move || IndicatorSet::delete(&db, &name, true).map_err(intel_error)).await?;
    Ok(Json(json!({ "deleted": deleted })))
}

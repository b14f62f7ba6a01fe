//! `POST /api/v1/explore` and `POST /api/v1/pivot`: VAST's context commands as `weir
//! explore` and `weir pivot` run them ([`crate::query::context`]), answered as NDJSON.
//!
//! - explore: `{"query": EXPR, "before": D, "after": D, "context": D, "by": FIELD,
//!   "for": [TYPE, ...], "limit": N}` (durations as `--before` takes them: `30s`, `5min`);
//! - pivot: `{"query": EXPR, "target": TYPE, "limit": N, "max_keys": N}`.
//!
//! The answer is built whole on a query slot's thread (it is bounded by `limit` and the
//! response cap, `413` beyond), then sent; damaged batches make it a `500`.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::api::body;
use super::error::ApiError;
use super::query::{self, NDJSON};
use super::state::AppState;
use crate::codec::writer::{writer_with, OutputFormat};
use crate::codec::StdoutSinkConfig;
use crate::query::context::{
    parse_span, ContextError, Explore, ExploreOptions, Pivot, PivotOptions, Related,
    DEFAULT_MAX_EVENTS_CONTEXT, DEFAULT_MAX_EVENTS_QUERY, DEFAULT_MAX_PIVOT_KEYS,
};
use crate::query::{Query, QueryError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExploreRequest {
    query: String,
    before: Option<String>,
    after: Option<String>,
    context: Option<String>,
    by: Option<String>,
    #[serde(default, rename = "for")]
    types: Vec<String>,
    limit: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PivotRequest {
    query: String,
    target: String,
    limit: Option<u64>,
    max_keys: Option<usize>,
}

fn context_error(e: ContextError) -> ApiError {
    match e {
        ContextError::Query(q) => ApiError::query(q),
        ContextError::Options(m) => ApiError::bad_request(m),
        other => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, other.to_string()),
    }
}

fn span(name: &str, text: Option<&str>) -> Result<Option<i64>, ApiError> {
    let Some(text) = text else { return Ok(None) };
    match parse_span(text) {
        Some(ns) if ns >= 0 => Ok(Some(ns)),
        _ => Err(ApiError::bad_request(format!(
            "{name}: expected a duration of 0 or more with a unit, such as 30s, 5min, 2h or 1d, not {text:?}"
        ))),
    }
}

/// The NDJSON of `events`, at most `cap` bytes.
fn write(
    earlier: &[QueryError],
    events: impl Iterator<Item = Result<Related, QueryError>>,
    cap: u64,
) -> Result<Vec<u8>, ApiError> {
    if let Some(e) = earlier.first() {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            e.to_string(),
        ));
    }
    let mut writer = writer_with(
        OutputFormat::Json,
        StdoutSinkConfig::default().json_timestamps,
    );
    let mut buf = Vec::new();
    for related in events {
        let related =
            related.map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        writer
            .write_rows(related.schema(), &mut related.rows(), &mut buf)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if buf.len() as u64 > cap {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the answer is larger than {} (the server's cap); ask for fewer events (limit)",
                    crate::size::Size(cap)
                ),
            ));
        }
    }
    writer.finish(&mut buf);
    Ok(buf)
}

fn ndjson(buf: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, NDJSON)], buf).into_response()
}

/// `POST /api/v1/explore`.
pub async fn explore(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: ExploreRequest = body(raw)?;
    let q = Query::parse(&req.query).map_err(ApiError::expr)?;
    let context = span("context", req.context.as_deref())?;
    let options = ExploreOptions {
        before: span("before", req.before.as_deref())?.or(context),
        after: span("after", req.after.as_deref())?.or(context),
        by: req.by,
        types: req
            .types
            .into_iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect(),
        max_events: req.limit.unwrap_or(u64::MAX),
        max_events_query: DEFAULT_MAX_EVENTS_QUERY,
        max_events_context: DEFAULT_MAX_EVENTS_CONTEXT,
    };
    let cap = state.limits.max_response_bytes;
    let buf = query::blocking(&state, move |archive| {
        let plan = Explore::plan(&archive, &q, options).map_err(context_error)?;
        let search = plan.search(&archive).map_err(ApiError::query)?;
        write(plan.errors(), search, cap)
    })
    .await?;
    Ok(ndjson(buf))
}

/// `POST /api/v1/pivot`.
pub async fn pivot(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: PivotRequest = body(raw)?;
    let q = Query::parse(&req.query).map_err(ApiError::expr)?;
    let options = PivotOptions {
        max_events: req.limit.unwrap_or(u64::MAX),
        max_keys: req.max_keys.unwrap_or(DEFAULT_MAX_PIVOT_KEYS),
        memory: state.limits.query_memory_limit(),
    };
    let cap = state.limits.max_response_bytes;
    let target = req.target;
    let buf = query::blocking(&state, move |archive| {
        let plan = Pivot::plan(&archive, &target, &q, options).map_err(context_error)?;
        let search = plan.search(&archive).map_err(ApiError::query)?;
        write(plan.errors(), search, cap)
    })
    .await?;
    Ok(ndjson(buf))
}

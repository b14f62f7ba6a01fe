//! The handlers of `/api/v1/*`, `/metrics` and `/health` (the reference is in the user guide,
//! `docs/book/src/serving/api.md`). Request bodies are JSON objects; unknown members, wrong
//! types and malformed JSON are `400` with the parser's message.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::ApiError;
use super::limits::MAX_GET_IDS;
use super::query::{self, QueryJob, NDJSON};
use super::state::AppState;
use crate::codec::writer::{writer_with, JsonTimestamps, OutputFormat};
use crate::codec::StdoutSinkConfig;
use crate::setting::Choice;

/// The JSON object of a request body.
pub(super) fn body<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|r| ApiError::new(r.status(), r.body_text()))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad_request(format!("invalid request body: {e}")))
}

/// `POST /api/v1/query`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryRequest {
    /// `EXPR | OP ...`; empty or absent: every event.
    #[serde(default)]
    query: String,
    /// A Sigma rule's YAML, instead of `query` (the guide, docs/book/src/suricata-sigma/sigma.md).
    sigma: Option<String>,
    /// At most this many events.
    limit: Option<u64>,
    /// `ndjson` (default) or `arrow`.
    format: Option<String>,
    /// How NDJSON writes times: `iso8601` (default), `epoch`, `millis`.
    timestamps: Option<String>,
    /// Answer the plan and its pruning instead of running the query.
    #[serde(default)]
    explain: bool,
}

/// `POST /api/v1/count`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CountRequest {
    #[serde(default)]
    query: String,
    /// A Sigma rule's YAML, instead of `query` (the guide, docs/book/src/suricata-sigma/sigma.md).
    sigma: Option<String>,
    /// Answer the plan and its pruning instead of counting.
    #[serde(default)]
    explain: bool,
}

/// `POST /api/v1/get`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetRequest {
    ids: Vec<u64>,
    timestamps: Option<String>,
}

fn timestamps(name: Option<&str>) -> Result<JsonTimestamps, ApiError> {
    match name {
        None => Ok(StdoutSinkConfig::default().json_timestamps),
        Some(n) => JsonTimestamps::from_name(n).ok_or_else(|| {
            ApiError::bad_request(format!(
                "unknown timestamps {n:?}: expected iso8601, epoch or millis"
            ))
        }),
    }
}

/// The expression of a request: its `query`, or its `sigma` rule compiled against the
/// archive's schemas (`400` naming the rule's line and feature when it cannot be a query).
async fn sigma_or_query(
    state: &AppState,
    query: String,
    sigma: Option<String>,
) -> Result<String, ApiError> {
    let Some(yaml) = sigma else {
        return Ok(query);
    };
    if !query.trim().is_empty() {
        return Err(ApiError::bad_request(
            "give either query or sigma, not both",
        ));
    }
    query::blocking(state, move |archive| {
        crate::query::sigma::archive_expression(&archive, &yaml)
            .map_err(|e| {
                ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            })?
            .map_err(|e| ApiError::bad_request(e.to_string()))
    })
    .await
}

/// `POST /api/v1/sigma`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SigmaRequest {
    /// The rule's YAML.
    sigma: String,
}

/// `POST /api/v1/sigma`: a Sigma rule as the expression it runs as over this archive,
/// `{"query": EXPR, "id": ..., "title": ..., "warnings": [...]}` (the page puts `query` in its
/// box, so that the rule's matches are searched, charted and linked as any query's); `400`
/// naming the rule's line and feature when it cannot be a query.
pub async fn sigma(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let req: SigmaRequest = body(raw)?;
    let rule = query::blocking(&state, move |archive| {
        crate::query::sigma::archive_rule(&archive, &req.sigma)
            .map_err(|e| {
                ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            })?
            .map_err(|e| ApiError::bad_request(e.to_string()))
    })
    .await?;
    Ok(Json(json!({
        "query": rule.expression,
        "id": rule.id,
        "title": rule.title,
        "warnings": rule.warnings,
    })))
}

/// `POST /api/v1/query`: the events of a query, streamed.
pub async fn query(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: QueryRequest = body(raw)?;
    let format = match req.format.as_deref() {
        None | Some("ndjson") | Some("json") => OutputFormat::Json,
        Some("arrow") => OutputFormat::Arrow,
        Some("csv") => OutputFormat::Csv,
        Some("parquet") => OutputFormat::Parquet,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown format {other:?}: expected ndjson, csv, arrow or parquet"
            )))
        }
    };
    let text = sigma_or_query(&state, req.query, req.sigma).await?;
    let chain = query::parse_chain(&text)?;
    if req.explain {
        let plan = query::blocking(&state, move |archive| query::explain(&archive, &chain)).await?;
        return Ok(Json(plan).into_response());
    }
    let job = QueryJob {
        chain: chain.with_memory(state.limits.query_memory_limit()),
        limit: req.limit,
        format,
        timestamps: timestamps(req.timestamps.as_deref())?,
    };
    query::stream(&state, job).await
}

/// `POST /api/v1/count`: `{"count": N}`.
pub async fn count(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let req: CountRequest = body(raw)?;
    let text = sigma_or_query(&state, req.query, req.sigma).await?;
    // Parse errors before taking a slot.
    let chain = query::parse_chain(&text)?;
    if req.explain {
        let plan = query::blocking(&state, move |archive| query::explain(&archive, &chain)).await?;
        return Ok(Json(plan));
    }
    let memory = state.limits.query_memory_limit();
    let n = query::blocking(&state, move |archive| {
        query::count_within(&archive, &text, memory)
    })
    .await?;
    Ok(Json(json!({ "count": n })))
}

/// `POST /api/v1/get`: the events with the given IDs as NDJSON, in the order given; `404`
/// naming the IDs that no event has.
pub async fn get(
    State(state): State<AppState>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: GetRequest = body(raw)?;
    if req.ids.len() > MAX_GET_IDS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_GET_IDS} IDs in one get, not {}",
            req.ids.len()
        )));
    }
    let ts = timestamps(req.timestamps.as_deref())?;
    let out = query::blocking(&state, move |archive| {
        let mut writer = writer_with(OutputFormat::Json, ts);
        let mut buf = Vec::new();
        let mut missing = Vec::new();
        let all = archive.get_many(&req.ids).map_err(|e| {
            ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        })?;
        for (id, found) in req.ids.iter().zip(all) {
            match found {
                Some((schema, row)) => writer
                    .write_rows(&schema, &mut std::iter::once(row.as_slice()), &mut buf)
                    .map_err(|e| {
                        ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
                    })?,
                None => missing.push(id.to_string()),
            }
        }
        writer.finish(&mut buf);
        if !missing.is_empty() {
            return Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                format!("no event with ID {}", missing.join(", ")),
            ));
        }
        Ok(buf)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, NDJSON)], out).into_response())
}

/// A time in nanoseconds since the epoch as RFC 3339.
fn rfc3339(ns: i64) -> String {
    let mut out = Vec::new();
    crate::codec::zeek::scalar::push_rfc3339(&mut out, ns);
    String::from_utf8_lossy(&out).into_owned()
}

/// `GET /api/v1/info`: `weir info --json`, plus `fields`: per schema its fields and types
/// (`[{"name", "type"}]`, the union of its definitions).
pub async fn info(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let value = query::blocking(&state, |archive| {
        let internal = |e: &dyn std::fmt::Display| {
            ApiError::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
        };
        let info = archive.info().map_err(|e| internal(&e))?;
        let mut value = serde_json::to_value(&info).map_err(|e| internal(&e))?;
        let time = info.ts.map(|[a, z]| [rfc3339(a), rfc3339(z)]);
        let mut fields = serde_json::Map::new();
        for s in crate::query::context::archive_schemas(&archive) {
            let entry = fields
                .entry(s.name.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = entry {
                for f in &s.fields {
                    if !list.iter().any(|x| x["name"] == f.name.as_str()) {
                        list.push(json!({"name": f.name, "type": f.ty.to_string()}));
                    }
                }
            }
        }
        if let Some(map) = value.as_object_mut() {
            map.insert("time".into(), json!(time));
            map.insert("fields".into(), Value::Object(fields));
        }
        Ok(value)
    })
    .await?;
    Ok(Json(value))
}

/// `GET /api/v1/status`: the pipelines' status, the server's queries and its resident
/// reader ([`crate::DbStats`]).
pub async fn status(State(state): State<AppState>) -> Json<Value> {
    let mut v = super::status::status_json(&state.pipelines);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "queries".into(),
            json!({
                "running": state.queries_running(),
                "max": state.limits.max_queries,
                "started": state.queries_started(),
            }),
        );
        o.insert("reader".into(), json!(state.reader.stats()));
    }
    Json(v)
}

/// `GET /metrics`: the pipelines' counters, as `--metrics-listen` serves them, plus
/// `weir_queries_running`.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut report = super::status::metrics_report(&state.pipelines);
    if let Some(o) = report.as_object_mut() {
        o.insert("queries_running".into(), state.queries_running().into());
    }
    crate::metrics_http::exposition(&report)
}

/// `GET /health`: `{"status": "ok"}`.
pub async fn health() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

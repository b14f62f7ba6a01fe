//! The routes of `weir serve` and what guards them.
//!
//! `GET /` (the page) and `GET /health` are open; everything else (`/api/v1/*`, `/metrics`)
//! requires the bearer token when the server has one ([`super::auth`]). Request bodies are
//! limited to [`MAX_BODY_BYTES`]. An unknown path is `404` with a JSON error; a known path
//! with another method `405`.

use axum::extract::DefaultBodyLimit;
use axum::http::{header, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;

use super::api;
use super::error::ApiError;
use super::limits::MAX_BODY_BYTES;
use super::state::AppState;

/// The web page: one file, its script and style inline, nothing fetched from elsewhere.
pub const PAGE: &str = include_str!("page.html");

/// The router of a server with `state`; `token`: the bearer token the API requires.
pub fn router(state: AppState, token: Option<String>) -> Router {
    let api = Router::new()
        .route("/api/v1/query", post(api::query))
        .route("/api/v1/count", post(api::count))
        .route("/api/v1/get", post(api::get))
        .route("/api/v1/explore", post(super::context::explore))
        .route("/api/v1/pivot", post(super::context::pivot))
        .route("/api/v1/info", get(api::info))
        .route("/api/v1/status", get(api::status))
        .route("/metrics", get(api::metrics))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such endpoint") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    let api = match token {
        Some(t) => api.layer(from_fn_with_state(t, super::auth::require_token)),
        None => api,
    };
    Router::new()
        .route("/health", get(api::health))
        .route(
            "/",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (header::CACHE_CONTROL, "no-cache"),
                    ],
                    PAGE,
                )
                    .into_response()
            }),
        )
        .merge(api)
}

//! The routes of `weir serve` and what guards them.
//!
//! Every request must name this server in `Host` and, when it has an `Origin`, come from
//! this server's page ([`super::guard`], `403`). `GET /` (the page) and `GET /health` are
//! otherwise open; everything else (`/api/v1/*`, `/metrics`) requires the bearer token when
//! the server has one ([`super::auth`]), and a POST a JSON body ([`super::guard`]) of at
//! most [`MAX_BODY_BYTES`] that arrives within the body deadline. An unknown path is `404`
//! with a JSON error; a known path with another method `405`. Every answer carries the
//! headers of [`super::guard::security_headers`]; the page its own policy
//! ([`super::guard::page_csp`]).

use axum::extract::DefaultBodyLimit;
use axum::http::{header, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::Router;

use super::api;
use super::error::ApiError;
use super::guard::{self, Guard};
use super::limits::MAX_BODY_BYTES;
use super::state::AppState;

/// The web page: one file, its script and style inline, nothing fetched from elsewhere.
pub const PAGE: &str = include_str!("page.html");

/// The router of a server with `state`; `token`: the bearer token the API requires;
/// `guard`: the `Host` and `Origin` the server answers.
pub fn router(state: AppState, token: Option<String>, guard: Guard) -> Router {
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
        .with_state(state)
        .layer(from_fn(guard::read_body));
    // The token before the body: an unauthenticated client's body is never waited for.
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
                        (header::CONTENT_SECURITY_POLICY, guard::page_csp()),
                    ],
                    PAGE,
                )
                    .into_response()
            }),
        )
        .merge(api)
        .layer(from_fn_with_state(guard, guard::check_origin))
        .layer(from_fn(guard::security_headers))
}

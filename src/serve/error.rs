//! The errors of the API, answered as JSON: `{"error": MESSAGE}`, plus for an expression
//! that does not parse or type-check `"position"` (the byte offset of the caret in the
//! query), `"column"` (1-based, in characters) and `"expr"`. The message is the CLI's
//! (`invalid expression: ...` with the caret lines).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::query::{ExprError, QueryError};

/// An error answer: a status and a JSON body.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The message (`error`).
    pub message: String,
    /// The expression problem, when the error is one.
    pub expr: Option<ExprError>,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            expr: None,
        }
    }

    /// `400`: a request the client must change.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// `400` for an expression that does not parse or type-check, as the CLI says it.
    pub fn expr(e: ExprError) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: format!("invalid expression: {e}"),
            expr: Some(e),
        }
    }

    /// `500` for an archive that cannot be read, `400` for an ill-typed expression, `422`
    /// for an operator over its memory limit or the query over its memory budget.
    pub fn query(e: QueryError) -> ApiError {
        match e {
            QueryError::Expr(e) => ApiError::expr(e),
            QueryError::Limit(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m),
            e @ QueryError::Memory { .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
            }
            other => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut v = json!({ "error": self.message });
        if let (Some(e), Some(o)) = (&self.expr, v.as_object_mut()) {
            o.insert("position".into(), e.pos.into());
            o.insert("column".into(), e.column().into());
            o.insert("expr".into(), e.expr.clone().into());
            o.insert("reason".into(), e.message.clone().into());
        }
        v
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// A refusal: `status` with a JSON error, and the connection closed after it.
pub(super) fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    let mut r = ApiError::new(status, message).into_response();
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

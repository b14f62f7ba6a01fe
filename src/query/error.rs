//! The query errors: a malformed or ill-typed expression ([`ExprError`], shown with a caret
//! under the position), and the errors of running a query over an archive ([`QueryError`]).

use std::fmt;

use crate::store::StoreError;
use crate::value::DecodeError;

/// A problem at a position of an expression: a syntax error, a literal that does not parse,
/// or a comparison no field can make well-typed.
///
/// Displayed on three lines: the message with the 1-based column, the expression, and a caret
/// under the position:
///
/// ```text
/// expected a value after `==` at column 7
///   ts == && x
///         ^
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ExprError {
    /// The whole expression.
    pub expr: String,
    /// Byte offset of the problem in `expr`.
    pub pos: usize,
    /// What is wrong, or what was expected.
    pub message: String,
}

impl ExprError {
    /// A problem at byte `pos` of `expr`.
    pub fn new(expr: &str, pos: usize, message: impl Into<String>) -> ExprError {
        ExprError {
            expr: expr.to_string(),
            pos: pos.min(expr.len()),
            message: message.into(),
        }
    }

    /// The 1-based column (in characters) of the position.
    pub fn column(&self) -> usize {
        self.expr
            .get(..self.pos)
            .map_or(self.pos, |s| s.chars().count())
            + 1
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let col = self.column();
        // Control characters would move the caret: show them as spaces.
        let shown: String = self
            .expr
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        write!(
            f,
            "{} at column {col}\n  {shown}\n  {:>width$}",
            self.message,
            "^",
            width = col
        )
    }
}

/// The parser's error type (an [`ExprError`]).
pub type ParseError = ExprError;

/// Why a query over an archive failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The expression is malformed or ill-typed.
    #[error("invalid expression: {0}")]
    Expr(#[from] ExprError),
    /// The archive could not be read (a damaged segment is reported and skipped).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored row does not decode with its schema.
    #[error("a row does not decode: {0}")]
    Decode(#[from] DecodeError),
    /// An operator reached one of its memory limits (`sort` without `head`, `summarize`).
    #[error("{0}")]
    Limit(String),
    /// The query's operators together needed more than its memory budget
    /// ([`crate::query::memory`]); `operator` is the one that passed it, as written.
    #[error(
        "`{operator}` needs more than the query's memory budget of {} ({option}); narrow the query, keep fewer events (`| head N`), or raise {option}",
        crate::size::format_size(*budget)
    )]
    Memory {
        /// The operator, as written in the chain.
        operator: String,
        /// The budget, in bytes.
        budget: u64,
        /// The option that sets it.
        option: &'static str,
    },
    /// A search thread failed (a bug; its batch's results are missing).
    #[error("a search thread failed: the results of one batch are missing")]
    Worker,
    /// The archive's cancellation token was cancelled ([`crate::store::Archive::cancel_on`]):
    /// the search stopped before its end.
    #[error("the search was cancelled")]
    Cancelled,
}

//! A plain reference evaluator of weir's expression language, kept in the tests (issue 56:
//! "the property test of random expressions over random events compares the engine with a
//! plain reference evaluator kept in the tests"), for `engine_reference.rs`.
//!
//! - [`value`]: Zeek's types and values, the exact orders the language defines on them.
//! - [`tsv`]: schemas and events ([`tsv::Log`]), written as and read from Zeek TSV.
//! - [`random`]: random schemas and events from small pools of values.
//! - [`expr`]: the syntax tree of expressions, generated at random and printed as a query.
//! - [`eval`]: what an expression means on an event, and when the engine must refuse it.
//!
//! Files depend one way: `value` <- `tsv` <- `random` <- `expr` <- `eval`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

pub mod eval;
pub mod expr;
pub mod random;
pub mod tsv;
pub mod value;

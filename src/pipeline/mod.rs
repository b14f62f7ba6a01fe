//! The pipeline: its definition files and (elsewhere) the runtime that executes them.

pub mod config;

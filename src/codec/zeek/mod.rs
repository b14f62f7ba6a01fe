//! Zeek's log formats: TSV (the ASCII writer's default) and JSON lines.

pub mod conn_community_id;
pub mod json;
pub mod parallel;
pub mod scalar;
pub mod schema;
pub mod tsv;
pub mod tsv_writer;

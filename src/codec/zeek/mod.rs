//! Zeek's log formats: TSV (the ASCII writer's default) and JSON lines.

pub mod tsv;

//! The integration tests, in one test binary (as rust-analyzer does): each former
//! `tests/NAME.rs` is the module `NAME` here, so `cargo test` links one binary with arrow,
//! parquet and tokio instead of one per file. Run one file's tests with
//! `cargo test --test it NAME::` (a filter on the module path).
//!
//! The tests share one process and run on several threads: each works in its own temporary
//! directory, listens on port 0 and changes no process-wide state (environment, working
//! directory, signal handlers, limits); one that needs a process of its own re-executes this
//! binary for one test (`store_crash`, `store_memory`).

mod common;
mod reference;

mod analyst_answers;
mod archive_umask;
mod arrow_decode;
mod arrow_lake;
mod arrow_mutations;
mod batch_writers;
mod batcher_props;
mod book;
mod cli_archive_roundtrip;
mod cli_convert;
mod cli_crash_recovery;
mod cli_erase;
mod cli_follow;
mod cli_import;
mod cli_import_resume;
mod cli_limits;
mod cli_polish;
mod cli_search;
mod column_stats;
mod columnar_batches;
mod community_id;
mod concepts;
mod corpus_roundtrip;
mod crash_kill9;
mod db_api;
mod engine_reference;
mod explore_pivot;
mod fault_injection;
mod fault_input;
mod fault_misc;
mod fault_store;
mod follow_eve;
mod follow_identity;
mod follow_lookalike;
mod follow_truncate;
mod follow_zeekctl;
mod fuzz_regressions;
mod group_commit;
mod intel;
mod json_writer;
mod lake_engines;
mod lake_s3;
mod layout;
mod live_match;
mod metrics_endpoint;
mod output_formats;
mod pipeline_config;
mod pipeline_graph;
mod query_errors;
mod query_explain;
mod query_kernel;
mod query_language;
mod query_memory;
mod query_operators;
mod query_pruning;
mod recipes;
mod repair_flips;
mod segment_corruption;
mod segment_format;
mod segment_index;
mod sensor_data;
mod serve;
mod serve_guard;
mod serve_memory;
mod serve_resident;
mod sightings_delivery;
mod sigma;
mod source_read;
mod store_concurrent;
mod store_concurrent_scan;
mod store_crash;
mod store_erase;
mod store_get;
mod store_many;
mod store_memory;
mod store_roundtrip;
mod store_sink;
mod summarize_order;
mod suricata_eve;
mod wal_damage;
mod wal_recovery;
mod zeek_json_reader;
mod zeek_json_typed;
mod zeek_tsv_parallel;
mod zeek_tsv_reader;
mod zeek_tsv_writer;

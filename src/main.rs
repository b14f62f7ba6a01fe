//! The `weir` command. All of it lives in [`cli`] (the only place `anyhow` is used); the
//! library holds the pipeline, the formats and the archive.

mod cli;

/// jemalloc on Linux (see its entry in Cargo.toml): the import's batches and buffers of a few
/// megabytes are freed and allocated again all the time, and glibc returns and re-faults them.
#[cfg(target_os = "linux")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}

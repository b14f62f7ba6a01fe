//! The `weir` command. All of it lives in [`cli`] (the only place `anyhow` is used); the
//! library holds the pipeline, the formats and the archive.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

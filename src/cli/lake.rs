//! The Parquet flags shared by `weir export --to parquet` and `weir convert --to parquet`
//! (overrides of the Parquet sink's configuration, whose `validate()` checks them), and the
//! lake as an output of `weir export`.

use std::path::PathBuf;

use clap::Args;

use weir::unstable::codec::arrow::ParallelLakeWriter;
use weir::unstable::codec::ParquetSinkConfig;
use weir::unstable::query::export::{ExportSink, Part};
use weir::unstable::query::{Flow, QueryError};

use super::args::SizeText;
use super::export::Output;
use super::UsageError;

#[derive(Debug, Args)]
pub struct LakeArgs {
    /// With `--to parquet`: rows per Parquet row group at most.
    #[arg(long, value_name = "ROWS",
          default_value_t = ParquetSinkConfig::default().row_group_size)]
    row_group_size: usize,
    /// With `--to parquet`: a file is closed and the next one begun at this size (`256MiB`).
    #[arg(long, value_name = "SIZE",
          default_value_t = SizeText(ParquetSinkConfig::default().max_file_size))]
    max_file_size: SizeText,
}

impl LakeArgs {
    /// The Parquet sink's configuration for a lake in `dir`, checked (a refused value is a
    /// usage error naming its flag).
    pub fn config(&self, dir: PathBuf) -> anyhow::Result<ParquetSinkConfig> {
        let config = ParquetSinkConfig {
            dir,
            row_group_size: self.row_group_size,
            max_file_size: self.max_file_size.0,
            ..ParquetSinkConfig::default()
        };
        config.validate().map_err(|e| {
            let flag = match e.key {
                "row_group_size" => "--row-group-size",
                "max_file_size" => "--max-file-size",
                "dir" => "--output",
                other => other,
            };
            UsageError(format!("{flag}: {}", e.problem))
        })?;
        Ok(config)
    }
}

/// Size of the block that [`keep_freed_memory`] frees (glibc's upper bound for its dynamic
/// mmap threshold is 32 MiB).
const MALLOC_WARMUP: usize = 16 << 20;

/// Makes glibc's malloc keep freed memory for reuse rather than hand it back to the kernel at
/// once. Until the first block served by `mmap` is freed, glibc maps every block of 128 KiB
/// or more on its own and trims a heap whose free top passes 256 KiB; freeing such a block
/// raises both thresholds to its size (and twice it). Parquet's page buffers (1 MiB, grown
/// by doubling) and the column chunks that the writing thread frees for the encoders kept
/// the heaps being trimmed and faulted in again: the kernel's share of exporting W1000 was
/// 0.8 s of 5.5 s of CPU. After one 16 MiB block is freed here it is 0.2 s, for about 30 MB
/// more peak memory. With another allocator this is one allocation and nothing else.
fn keep_freed_memory() {
    let block: Vec<u8> = Vec::with_capacity(MALLOC_WARMUP);
    // `black_box`: an allocation that is never used may otherwise be left out.
    drop(std::hint::black_box(block));
}

/// The schemas of the archive's segments, each once. A segment that cannot be opened is left
/// out here (the search reports it).
fn archive_schemas(
    archive: &weir::unstable::store::Archive,
) -> Vec<weir::unstable::types::SchemaRef> {
    let mut out: Vec<weir::unstable::types::SchemaRef> = Vec::new();
    for entry in &archive.catalog().segments {
        let Ok(seg) = archive.segment(entry) else {
            continue;
        };
        for s in seg.schemas() {
            if !out
                .iter()
                .any(|o| std::sync::Arc::ptr_eq(o, s) || **o == **s)
            {
                out.push(s.clone());
            }
        }
    }
    out
}

/// `weir export --to parquet --output DIR`: the events into a lake, record batches built on
/// a thread per core in the search's order; a one-line summary on stderr at the end.
pub(super) struct Lake {
    writer: ParallelLakeWriter<Part>,
    dir: PathBuf,
}

impl Lake {
    /// A lake in `config`'s directory. `declare`: the archive of a plain expression, whose
    /// schemas (known ahead from its catalog) each partition's files get one schema of.
    pub(super) fn open(
        config: &ParquetSinkConfig,
        declare: Option<&weir::unstable::store::Archive>,
    ) -> anyhow::Result<Lake> {
        let mut writer = config.writer()?;
        if let Some(archive) = declare {
            keep_freed_memory();
            for (name, conflict) in writer.declare(&archive_schemas(archive)) {
                say!(
                    "weir: warning: the schemas of {name} cannot share one Parquet schema: {conflict}"
                );
            }
        }
        Ok(Lake {
            writer: ParallelLakeWriter::new(writer, 0),
            dir: config.dir.clone(),
        })
    }
}

impl ExportSink for Lake {
    type Error = anyhow::Error;
    fn write(&mut self, part: Part, take: usize) -> anyhow::Result<Flow> {
        self.writer.write(part, take)?;
        Ok(Flow::More)
    }
    fn damaged(&mut self, _error: QueryError) {}
}

impl Output for Lake {
    fn close(self) -> anyhow::Result<()> {
        let summary = self.writer.close()?;
        say!(
            "weir: wrote {} in {} ({}) to {}",
            super::plural(summary.events, "event"),
            super::plural(summary.files, "file"),
            weir::unstable::size::Size(summary.bytes),
            self.dir.display()
        );
        Ok(())
    }
}

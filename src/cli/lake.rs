//! The Parquet flags shared by `weir export --to parquet` and `weir convert --to parquet`:
//! overrides of the Parquet sink's configuration, whose `validate()` checks them.

use std::path::PathBuf;

use clap::Args;

use weir::codec::ParquetSinkConfig;

use super::args::SizeText;
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

/// `weir export --to parquet --output DIR`: the matching events into a lake, stopping after
/// `limit` events; a one-line summary on stderr.
pub fn export(
    archive: &weir::store::Archive,
    query: &weir::query::Query,
    limit: Option<u64>,
    config: &ParquetSinkConfig,
) -> anyhow::Result<()> {
    // Record batches are built on a thread per core, in the search's order.
    let mut lake = weir::codec::arrow::ParallelLakeWriter::new(config.writer()?, 0);
    let mut left = limit.unwrap_or(u64::MAX);
    let mut damaged = None;
    if left > 0 {
        let mut search = query.search(archive).map_err(super::search::query_error)?;
        while let Some(hits) = search.next() {
            let hits = match hits {
                Ok(h) => h,
                Err(e) => {
                    // A damaged segment is reported; the rest of the archive is still searched.
                    say!("weir: error: {e}");
                    damaged = Some(search.stats().clone());
                    continue;
                }
            };
            let take = (hits.len() as u64).min(left) as usize;
            lake.write(hits, take)?;
            left -= take as u64;
            if left == 0 {
                break;
            }
        }
    }
    let summary = lake.close()?;
    say!(
        "weir: wrote {} in {} ({}) to {}",
        super::plural(summary.events, "event"),
        super::plural(summary.files, "file"),
        weir::size::Size(summary.bytes),
        config.dir.display()
    );
    if let Some(stats) = damaged {
        let batches = stats.batches_damaged;
        anyhow::bail!(
            "skipped {} damaged {} ({}) (see above)",
            batches,
            if batches == 1 { "batch" } else { "batches" },
            super::plural(stats.events_damaged, "event")
        );
    }
    Ok(())
}

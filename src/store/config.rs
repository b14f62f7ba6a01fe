//! The configuration of the archive sink: the `[sinks.NAME] type = "archive"` table of a
//! pipeline file, and `--db`, `--max-segment-size`, `--sync`, `--compression`,
//! `--compression-level`, `--no-sketches`, `--max-archive-size` and `--retain` of
//! `weir import`.

use std::path::PathBuf;

use serde::Deserialize;

use std::time::Duration;

use super::retention::{Maintenance, MIN_BUDGET_SEGMENTS};
use super::{ArchiveSink, CommitHook, OpenReport, Result, Store, StoreOptions};
use crate::segment::{check_max_segment_size, Codec, Compression, SegmentError};
use crate::setting::{de_period, de_size, de_size_with_unit, InvalidSetting, Problem};
use crate::size::Size;
use crate::wal::SyncPolicy;

/// An archive sink: the database directory and the store's settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ArchiveSinkConfig {
    /// The database directory (required; created when missing).
    pub db: PathBuf,
    /// Largest segment file in bytes (see [`crate::segment::check_max_segment_size`]).
    #[serde(deserialize_with = "de_size")]
    pub max_segment_size: u64,
    /// When the write-ahead log and segments are fsynced.
    pub sync: SyncPolicy,
    /// How batches are compressed in the segments: `zstd` (default), `lz4` or `none`.
    pub compression: Codec,
    /// The codec's level (`None`: the codec's default, [`Codec::default_level`]).
    pub compression_level: Option<i32>,
    /// Whether each batch gets a sketch for query pruning (default: yes).
    pub sketches: bool,
    /// The disk budget: the oldest segments are erased beyond it (see
    /// [`crate::store::Maintenance`]); `None`: unbounded. A size with a unit (`"500GiB"`).
    #[serde(deserialize_with = "de_some_size")]
    pub max_archive_size: Option<u64>,
    /// Erase segments whose newest event is older than this; `None`: keep everything. A
    /// duration with a unit (`"90d"`).
    #[serde(deserialize_with = "de_some_duration")]
    pub retain: Option<Duration>,
    /// Merge small sealed segments when the input pauses.
    pub compact: bool,
    /// Sigma rules matched live on every commit, besides the archive's indicator sets (a
    /// rule file, or a directory of `*.yml`/`*.yaml`; see [`crate::detect`]); `None`: the
    /// sets alone.
    pub rules_dir: Option<PathBuf>,
    /// Match each indicator set added or changed against the archive's past in the
    /// background, its sightings committed with the next commits (see [`crate::detect`]);
    /// `weir serve` turns it on for its pipelines.
    pub retro: bool,
}

fn de_some_size<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<u64>, D::Error> {
    de_size_with_unit(d).map(Some)
}

fn de_some_duration<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    de_period(d).map(Some)
}

impl Default for ArchiveSinkConfig {
    /// No directory yet, the store's defaults.
    fn default() -> ArchiveSinkConfig {
        let store = StoreOptions::default();
        ArchiveSinkConfig {
            db: PathBuf::new(),
            max_segment_size: store.max_segment_size,
            sync: store.sync,
            compression: store.compression.codec,
            compression_level: None,
            sketches: store.sketches,
            max_archive_size: None,
            retain: None,
            compact: false,
            rules_dir: None,
            retro: false,
        }
    }
}

impl ArchiveSinkConfig {
    /// An archive sink writing to `db` with the store's defaults.
    pub fn new(db: impl Into<PathBuf>) -> ArchiveSinkConfig {
        ArchiveSinkConfig {
            db: db.into(),
            ..ArchiveSinkConfig::default()
        }
    }

    /// Checks the settings: the one check of the segment size limit, for `--max-segment-size`
    /// and pipeline files alike, of the compression level, the disk budget and the
    /// retention period.
    pub fn validate(&self) -> std::result::Result<(), InvalidSetting> {
        if let Some(level) = self.compression_level {
            let levels = self.compression.levels();
            if !levels.contains(&level) {
                let reason = if levels.start() == levels.end() {
                    format!("{} has no levels", self.compression)
                } else {
                    format!(
                        "{} takes levels {} to {}",
                        self.compression,
                        levels.start(),
                        levels.end()
                    )
                };
                return Err(InvalidSetting::out_of_range(
                    "compression_level",
                    level.to_string(),
                    reason,
                ));
            }
        }
        self.validate_segment_size()?;
        if let Some(budget) = self.max_archive_size {
            let min = self.max_segment_size.saturating_mul(MIN_BUDGET_SEGMENTS);
            if budget < min {
                return Err(InvalidSetting::out_of_range(
                    "max_archive_size",
                    Size(budget).to_string(),
                    format!(
                        "the budget must hold at least {MIN_BUDGET_SEGMENTS} segments of max_segment_size {} (the active segment is never erased): use at least {}, or a smaller max_segment_size",
                        Size(self.max_segment_size),
                        Size(min)
                    ),
                ));
            }
        }
        if self.retain == Some(Duration::ZERO) {
            return Err(InvalidSetting::out_of_range(
                "retain",
                "0s",
                "must be longer than 0 (leave it out to keep everything)",
            ));
        }
        Ok(())
    }

    fn validate_segment_size(&self) -> std::result::Result<(), InvalidSetting> {
        if self.db.as_os_str().is_empty() {
            return Err(InvalidSetting {
                key: "db",
                problem: Problem::Missing {
                    hint: "the database directory, e.g. db = \"${WEIR_DB:-weir.db}\"".into(),
                },
            });
        }
        match check_max_segment_size(self.max_segment_size) {
            Ok(_) => Ok(()),
            Err(SegmentError::InvalidMaxSegmentSize { size, reason }) => Err(
                InvalidSetting::out_of_range("max_segment_size", Size(size).to_string(), reason),
            ),
            Err(e) => Err(InvalidSetting::out_of_range(
                "max_segment_size",
                Size(self.max_segment_size).to_string(),
                e.to_string(),
            )),
        }
    }

    /// The store's options.
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions {
            max_segment_size: self.max_segment_size,
            sync: self.sync,
            compression: Compression {
                codec: self.compression,
                level: self
                    .compression_level
                    .unwrap_or(self.compression.default_level()),
            },
            sketches: self.sketches,
        }
    }

    /// Retention and background compaction.
    pub fn maintenance(&self) -> Maintenance {
        Maintenance {
            max_archive_size: self.max_archive_size,
            retain: self.retain,
            compact: self.compact,
        }
    }

    /// Opens the archive (blocking: it replays the write-ahead log and applies retention)
    /// behind a sink.
    pub fn build(&self) -> Result<(ArchiveSink, OpenReport)> {
        self.build_with(|_, _| Ok(()), None)
    }

    /// [`ArchiveSinkConfig::build`], calling `check` with the writer and what opening found
    /// before the sink starts (to refuse, or change the writer, e.g.
    /// [`Store::clear_checkpoints_lost`]), and with a [`CommitHook`] (live matching).
    pub fn build_with(
        &self,
        check: impl FnOnce(&mut Store, &OpenReport) -> Result<()>,
        hook: Option<Box<dyn CommitHook>>,
    ) -> Result<(ArchiveSink, OpenReport)> {
        let (mut store, report) = Store::open_writer(&self.db, self.store_options())?;
        check(&mut store, &report)?;
        store.set_maintenance(self.maintenance())?;
        Ok((ArchiveSink::with_hook(store, hook)?, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_keys_make_the_store_options() {
        let c: ArchiveSinkConfig = toml::from_str(
            "db = \"x\"\ncompression = \"zstd\"\ncompression_level = -3\nsketches = false",
        )
        .unwrap();
        c.validate().unwrap();
        let o = c.store_options();
        assert_eq!(
            o.compression,
            Compression {
                codec: Codec::Zstd,
                level: -3
            }
        );
        assert!(!o.sketches);
        let d = ArchiveSinkConfig::new("x").store_options();
        assert_eq!(d.compression, Compression::new(Codec::Zstd));
        assert_eq!(d.compression.level, Codec::Zstd.default_level());
        assert!(d.sketches);
        let bad = ArchiveSinkConfig {
            compression_level: Some(99),
            ..ArchiveSinkConfig::new("x")
        };
        assert_eq!(bad.validate().unwrap_err().key, "compression_level");
    }
}

//! The Parquet sink: `[sinks.NAME] type = "parquet"` of a pipeline file, `weir convert --to
//! parquet --output DIR` and `weir export --to parquet --output DIR`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use super::lake::{LakeOptions, LakeSummary, LakeWriter};
use super::ArrowCodecError;
use crate::batch::Batch;
use crate::setting::{de_size, InvalidSetting, Problem};
use crate::size::Size;

/// A Parquet lake sink: where and how the files are written (the layout is in
/// [`super::lake`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParquetSinkConfig {
    /// The lake's root directory (required; created when missing).
    pub dir: PathBuf,
    /// A file is closed and the next one begun once it reaches this size (default 256 MiB;
    /// at least 1 MiB).
    #[serde(deserialize_with = "de_size")]
    pub max_file_size: u64,
    /// Rows per row group at most (default 122880, as DuckDB; 1 to 2^24).
    pub row_group_size: usize,
    /// zstd compression level (default 3; 1 to 22).
    pub compression_level: i32,
}

impl Default for ParquetSinkConfig {
    fn default() -> ParquetSinkConfig {
        ParquetSinkConfig {
            dir: PathBuf::new(),
            max_file_size: 256 << 20,
            row_group_size: 122_880,
            compression_level: 3,
        }
    }
}

impl ParquetSinkConfig {
    /// Smallest `max_file_size`.
    pub const MIN_FILE_SIZE: u64 = 1 << 20;
    /// Largest `row_group_size`.
    pub const MAX_ROW_GROUP_SIZE: usize = 1 << 24;

    /// A lake in `dir` with the default settings.
    pub fn new(dir: impl Into<PathBuf>) -> ParquetSinkConfig {
        ParquetSinkConfig {
            dir: dir.into(),
            ..ParquetSinkConfig::default()
        }
    }

    /// Checks the settings: the one check of each limit.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.dir.as_os_str().is_empty() {
            return Err(InvalidSetting {
                key: "dir",
                problem: Problem::Missing {
                    hint: "the lake's directory, e.g. dir = \"lake\"".into(),
                },
            });
        }
        if self.max_file_size < Self::MIN_FILE_SIZE {
            return Err(InvalidSetting::out_of_range(
                "max_file_size",
                Size(self.max_file_size).to_string(),
                format!("at least {}", Size(Self::MIN_FILE_SIZE)),
            ));
        }
        if !(1..=Self::MAX_ROW_GROUP_SIZE).contains(&self.row_group_size) {
            return Err(InvalidSetting::out_of_range(
                "row_group_size",
                self.row_group_size.to_string(),
                format!("1 to {} rows", Self::MAX_ROW_GROUP_SIZE),
            ));
        }
        if !(1..=22).contains(&self.compression_level) {
            return Err(InvalidSetting::out_of_range(
                "compression_level",
                self.compression_level.to_string(),
                "a zstd level, 1 to 22",
            ));
        }
        Ok(())
    }

    /// The lake writer's options.
    pub fn lake_options(&self) -> LakeOptions {
        LakeOptions {
            dir: self.dir.clone(),
            max_file_size: self.max_file_size,
            row_group_size: self.row_group_size,
            compression_level: self.compression_level,
        }
    }

    /// The lake writer (blocking; for a command that writes from one thread).
    pub fn writer(&self) -> Result<LakeWriter, ArrowCodecError> {
        LakeWriter::new(self.lake_options())
    }

    /// The sink: a [`LakeWriter`] on a thread of its own.
    pub fn build(&self) -> Result<ParquetSink, ArrowCodecError> {
        ParquetSink::new(self.writer()?)
    }
}

/// A backpressured [`futures::Sink`] of batches into a Parquet lake. The writer runs on the
/// thread `weir-parquet` with one batch queued; `poll_flush` does not cut files (a live
/// pipeline flushes often, and a Parquet file is readable only once complete); `poll_close`
/// completes every file. The first error ends the writer and is returned by the next call.
pub struct ParquetSink {
    tx: PollSender<Batch>,
    done: Option<oneshot::Receiver<Result<LakeSummary, ArrowCodecError>>>,
    summary: Option<LakeSummary>,
}

impl std::fmt::Debug for ParquetSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetSink")
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

/// The error of a writer thread that is gone.
fn gone(why: &str) -> ArrowCodecError {
    ArrowCodecError::Fs(crate::fs::FsError::new(
        "write",
        "parquet lake",
        std::io::Error::other(why.to_string()),
    ))
}

impl ParquetSink {
    /// Runs `writer` on its own thread behind a sink.
    pub fn new(mut writer: LakeWriter) -> Result<ParquetSink, ArrowCodecError> {
        let (tx, mut rx) = mpsc::channel::<Batch>(1);
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("weir-parquet".into())
            .spawn(move || {
                let mut run = || -> Result<(), ArrowCodecError> {
                    while let Some(b) = rx.blocking_recv() {
                        writer.write_rows(b.schema(), b.rows())?;
                    }
                    Ok(())
                };
                let result = run().and_then(|()| writer.close());
                let _ = done_tx.send(result);
            })
            .map_err(|e| {
                crate::fs::FsError::new("start the writer thread of", "parquet lake", e)
            })?;
        Ok(ParquetSink {
            tx: PollSender::new(tx),
            done: Some(done_rx),
            summary: None,
        })
    }

    /// What was written, once the sink is closed.
    pub fn summary(&self) -> Option<&LakeSummary> {
        self.summary.as_ref()
    }

    fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<Result<LakeSummary, ArrowCodecError>> {
        if let Some(s) = &self.summary {
            return Poll::Ready(Ok(s.clone()));
        }
        let Some(rx) = self.done.as_mut() else {
            return Poll::Ready(Err(gone("the writer failed earlier")));
        };
        let r = ready!(Pin::new(rx).poll(cx));
        self.done = None;
        Poll::Ready(match r {
            Ok(Ok(s)) => {
                self.summary = Some(s.clone());
                Ok(s)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(gone("the writer thread panicked")),
        })
    }

    fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ArrowCodecError>> {
        match ready!(self.poll_done(cx)) {
            Ok(_) => Poll::Ready(Err(gone("the sink is closed"))),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl futures::Sink<Batch> for ParquetSink {
    type Error = ArrowCodecError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ArrowCodecError>> {
        let this = self.get_mut();
        match ready!(this.tx.poll_reserve(cx)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(_) => this.poll_gone(cx),
        }
    }

    fn start_send(self: Pin<&mut Self>, item: Batch) -> Result<(), ArrowCodecError> {
        self.get_mut()
            .tx
            .send_item(item)
            .map_err(|_| gone("the writer stopped"))
    }

    fn poll_flush(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Result<(), ArrowCodecError>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), ArrowCodecError>> {
        let this = self.get_mut();
        this.tx.close();
        ready!(this.poll_done(cx)).map(|_| ())?;
        Poll::Ready(Ok(()))
    }
}

//! The configurations of the writer sinks: `[sinks.NAME] type = "file"`, `type = "stdout"`
//! and `type = "directory"` (one file per log path) of a pipeline file.

use std::path::PathBuf;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures::Sink;
use serde::Deserialize;

use super::writer::{writer_with, JsonTimestamps, OutputFormat, WriteError, WriterSink};
use crate::batch::Batch;
use crate::setting::{InvalidSetting, Problem};

/// Refuses a format that is not a byte stream (`parquet`: the `parquet` sink writes it).
fn stream_format(format: OutputFormat) -> Result<(), InvalidSetting> {
    if format.is_directory_only() {
        return Err(InvalidSetting::out_of_range(
            "format",
            format.to_string(),
            "a Parquet lake is written by a sink of type = \"parquet\"",
        ));
    }
    Ok(())
}

/// A sink writing events to a file (created or truncated) in an [`OutputFormat`] that is a stream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileSinkConfig {
    /// The file (required).
    pub path: PathBuf,
    /// Its format (default JSON lines).
    pub format: OutputFormat,
    /// How JSON spells times (default `iso8601`).
    pub json_timestamps: JsonTimestamps,
}

impl Default for FileSinkConfig {
    fn default() -> FileSinkConfig {
        FileSinkConfig {
            path: PathBuf::new(),
            format: OutputFormat::Json,
            json_timestamps: JsonTimestamps::default(),
        }
    }
}

impl FileSinkConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.path.as_os_str().is_empty() {
            return Err(InvalidSetting {
                key: "path",
                problem: Problem::Missing {
                    hint: "the file to write, e.g. path = \"events.json\"".into(),
                },
            });
        }
        stream_format(self.format)
    }

    /// Creates the file and the sink writing to it.
    pub async fn build(&self) -> std::io::Result<WriterSink<tokio::fs::File>> {
        let file = tokio::fs::File::create(&self.path).await?;
        Ok(WriterSink::new(
            writer_with(self.format, self.json_timestamps),
            file,
        ))
    }
}

/// A sink writing events to standard output in an [`OutputFormat`] that is a stream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StdoutSinkConfig {
    /// The format (default Zeek TSV).
    pub format: OutputFormat,
    /// How JSON spells times (default `iso8601`).
    pub json_timestamps: JsonTimestamps,
}

impl Default for StdoutSinkConfig {
    fn default() -> StdoutSinkConfig {
        StdoutSinkConfig {
            format: OutputFormat::ZeekTsv,
            json_timestamps: JsonTimestamps::default(),
        }
    }
}

impl StdoutSinkConfig {
    /// Checks the settings: a stream format.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        stream_format(self.format)
    }

    /// The sink writing to stdout.
    pub fn build(&self) -> WriterSink<tokio::io::Stdout> {
        WriterSink::new(
            writer_with(self.format, self.json_timestamps),
            tokio::io::stdout(),
        )
    }
}

/// A sink writing one file per log path into a directory, as Zeek does: `conn.log`,
/// `dns.log`, … for Zeek TSV (one header block per file, and a new one only when that log's
/// schema changes), `conn.json`, … for JSON lines (`.arrow`, `.csv`, and `.txt` for a
/// table). Files are created or truncated when their
/// first event arrives; the directory is created with the first file (its parent must exist),
/// as the `parquet` sink does.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DirSinkConfig {
    /// The directory (required).
    pub dir: PathBuf,
    /// The files' format (default Zeek TSV).
    pub format: OutputFormat,
    /// How JSON spells times (default `iso8601`).
    pub json_timestamps: JsonTimestamps,
}

impl Default for DirSinkConfig {
    fn default() -> DirSinkConfig {
        DirSinkConfig {
            dir: PathBuf::new(),
            format: OutputFormat::ZeekTsv,
            json_timestamps: JsonTimestamps::default(),
        }
    }
}

impl DirSinkConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.dir.as_os_str().is_empty() {
            return Err(InvalidSetting {
                key: "dir",
                problem: Problem::Missing {
                    hint: "the directory to write the logs into, e.g. dir = \"logs\"".into(),
                },
            });
        }
        stream_format(self.format)
    }

    /// The sink (files are opened as their logs appear).
    pub fn build(&self) -> DirSink {
        DirSink {
            dir: self.dir.clone(),
            format: self.format,
            json_timestamps: self.json_timestamps,
            files: Vec::new(),
        }
    }
}

/// The sink of a [`DirSinkConfig`]: one [`WriterSink`] per log path.
#[derive(Debug)]
pub struct DirSink {
    dir: PathBuf,
    format: OutputFormat,
    json_timestamps: JsonTimestamps,
    /// The log path (`conn` of schema `zeek.conn`) and its file's sink, in order of appearance.
    files: Vec<(String, WriterSink<tokio::fs::File>)>,
}

impl DirSink {
    /// The log path of a schema: its name without the `zeek.` namespace.
    fn log_path(schema: &str) -> &str {
        schema.strip_prefix("zeek.").unwrap_or(schema)
    }

    /// The sink for `path`, creating its file on first use.
    fn file(&mut self, path: &str) -> Result<&mut WriterSink<tokio::fs::File>, WriteError> {
        let index = match self.files.iter().position(|(p, _)| p == path) {
            Some(i) => i,
            None => {
                // A log path becomes a file name: keep it to one plain component.
                let safe: String = path
                    .chars()
                    .map(|c| if c == '/' || c == '\0' { '_' } else { c })
                    .collect();
                let ext = match self.format {
                    OutputFormat::Json => "json",
                    OutputFormat::Arrow => "arrow",
                    OutputFormat::Csv => "csv",
                    OutputFormat::Table => "txt",
                    _ => "log",
                };
                // The directory is created with the first file, as the parquet sink does.
                crate::fs::create_dirs(&self.dir, &self.dir)
                    .map_err(|e| WriteError::Io(std::io::Error::new(e.kind(), e.to_string())))?;
                let name = self.dir.join(format!("{safe}.{ext}"));
                let file = std::fs::File::create(&name).map_err(|e| {
                    WriteError::Io(std::io::Error::new(
                        e.kind(),
                        format!("cannot create {}: {e}", name.display()),
                    ))
                })?;
                let sink = WriterSink::new(
                    writer_with(self.format, self.json_timestamps),
                    tokio::fs::File::from_std(file),
                );
                self.files.push((path.to_string(), sink));
                self.files.len() - 1
            }
        };
        Ok(&mut self.files[index].1)
    }
}

impl Sink<Batch> for DirSink {
    type Error = WriteError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        // Ready when every file's sink is: the next batch may go to any of them.
        for (_, sink) in &mut self.files {
            ready!(Pin::new(sink).poll_ready(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(mut self: Pin<&mut Self>, batch: Batch) -> Result<(), WriteError> {
        if batch.is_empty() {
            return Ok(());
        }
        let path = Self::log_path(&batch.schema().name).to_string();
        let sink = self.file(&path)?;
        Pin::new(sink).start_send(batch)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        for (_, sink) in &mut self.files {
            ready!(Pin::new(sink).poll_flush(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), WriteError>> {
        for (_, sink) in &mut self.files {
            ready!(Pin::new(sink).poll_close(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

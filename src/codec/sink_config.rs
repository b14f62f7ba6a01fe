//! The configurations of the writer sinks: `[sinks.NAME] type = "file"` and
//! `type = "stdout"` of a pipeline file.

use std::path::PathBuf;

use serde::Deserialize;

use super::writer::{writer_for, OutputFormat, WriterSink};
use crate::setting::{InvalidSetting, Problem};

/// A sink writing events to a file (created or truncated) as Zeek TSV or JSON lines.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FileSinkConfig {
    /// The file (required).
    pub path: PathBuf,
    /// Its format (default JSON lines).
    pub format: OutputFormat,
}

impl Default for FileSinkConfig {
    fn default() -> FileSinkConfig {
        FileSinkConfig {
            path: PathBuf::new(),
            format: OutputFormat::Json,
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
        Ok(())
    }

    /// Creates the file and the sink writing to it.
    pub async fn build(&self) -> std::io::Result<WriterSink<tokio::fs::File>> {
        let file = tokio::fs::File::create(&self.path).await?;
        Ok(WriterSink::new(writer_for(self.format), file))
    }
}

/// A sink writing events to standard output as Zeek TSV or JSON lines.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StdoutSinkConfig {
    /// The format (default Zeek TSV).
    pub format: OutputFormat,
}

impl Default for StdoutSinkConfig {
    fn default() -> StdoutSinkConfig {
        StdoutSinkConfig {
            format: OutputFormat::ZeekTsv,
        }
    }
}

impl StdoutSinkConfig {
    /// Checks the settings (there is nothing to refuse yet).
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        Ok(())
    }

    /// The sink writing to stdout.
    pub fn build(&self) -> WriterSink<tokio::io::Stdout> {
        WriterSink::new(writer_for(self.format), tokio::io::stdout())
    }
}

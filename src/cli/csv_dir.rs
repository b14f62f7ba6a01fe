//! `weir export --to csv --output DIR`: one CSV file per schema, `DIR/zeek.conn.csv`, each
//! with its header line (see [`weir::unstable::codec::csv_writer`]).
//!
//! The directory is created when missing. A file is created when the first event of its
//! schema arrives, and never overwritten: an existing file is an error naming it (the files
//! written before it stay). The file name is the schema's name with every character other than
//! ASCII letters, digits, `.`, `-` and `_` replaced by `_` (and a leading `.` too), then
//! `.csv`.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use weir::unstable::codec::csv_writer::CsvWriter;
use weir::unstable::codec::writer::EventWriter;
use weir::unstable::query::export::{ExportSink, Part, CHUNK};
use weir::unstable::query::{Flow, QueryError};
use weir::unstable::types::SchemaRef;

use super::export::Output;

/// The open files of the export, one per file name, in order of appearance.
pub(super) struct CsvDir {
    dir: PathBuf,
    files: Vec<CsvFile>,
    events: u64,
}

struct CsvFile {
    name: String,
    path: PathBuf,
    file: File,
    writer: CsvWriter,
    buf: Vec<u8>,
}

/// The file name of a schema's CSV file: `zeek.conn` → `zeek.conn.csv`.
fn file_name(schema: &str) -> String {
    let mut name: String = schema
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name.insert(0, '_');
    }
    name.push_str(".csv");
    name
}

impl CsvFile {
    fn write_pending(&mut self) -> anyhow::Result<()> {
        self.file
            .write_all(&self.buf)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.buf.clear();
        Ok(())
    }
}

impl CsvDir {
    /// The directory `dir`, created when missing.
    pub(super) fn new(dir: &Path) -> anyhow::Result<CsvDir> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create directory {}", dir.display()))?;
        Ok(CsvDir {
            dir: dir.to_path_buf(),
            files: Vec::new(),
            events: 0,
        })
    }

    /// The file of `schema`, created on first use.
    fn file(&mut self, schema: &str) -> anyhow::Result<&mut CsvFile> {
        let name = file_name(schema);
        let index = match self.files.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                let path = self.dir.join(&name);
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| {
                        if e.kind() == std::io::ErrorKind::AlreadyExists {
                            anyhow::anyhow!(
                                "refusing to overwrite {}: it exists (remove it, or choose another --output DIR)",
                                path.display()
                            )
                        } else {
                            anyhow::Error::new(e)
                                .context(format!("cannot create {}", path.display()))
                        }
                    })?;
                self.files.push(CsvFile {
                    name,
                    path,
                    file,
                    writer: CsvWriter::new(),
                    buf: Vec::with_capacity(CHUNK * 2),
                });
                self.files.len() - 1
            }
        };
        Ok(&mut self.files[index])
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
    ) -> anyhow::Result<()> {
        let mut rows = rows.peekable();
        if rows.peek().is_none() {
            return Ok(());
        }
        let f = self.file(&schema.name)?;
        f.writer.write_rows(schema, &mut rows, &mut f.buf)?;
        if f.buf.len() >= CHUNK {
            f.write_pending()?;
        }
        Ok(())
    }

    /// Writes what is pending and closes the files; the number of files.
    fn close_files(mut self) -> anyhow::Result<usize> {
        for f in &mut self.files {
            f.writer.finish(&mut f.buf);
            f.write_pending()?;
            f.file
                .sync_all()
                .with_context(|| format!("cannot write {}", f.path.display()))?;
        }
        Ok(self.files.len())
    }
}

impl ExportSink for CsvDir {
    type Error = anyhow::Error;
    fn write(&mut self, part: Part, take: usize) -> anyhow::Result<Flow> {
        self.write_rows(part.schema(), &mut part.rows().take(take))?;
        self.events += take as u64;
        Ok(Flow::More)
    }
    fn damaged(&mut self, _error: QueryError) {}
}

impl Output for CsvDir {
    /// Writes what is pending and closes the files; a one-line summary on stderr.
    fn close(self) -> anyhow::Result<()> {
        let (events, dir) = (self.events, self.dir.clone());
        let files = self.close_files()?;
        say!(
            "weir: wrote {} in {} to {}",
            super::plural(events, "event"),
            super::plural(files as u64, "file"),
            dir.display()
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::file_name;

    #[test]
    fn file_names_are_one_plain_component() {
        assert_eq!(file_name("zeek.conn"), "zeek.conn.csv");
        assert_eq!(file_name("weir.summarize"), "weir.summarize.csv");
        assert_eq!(file_name("a/b c"), "a_b_c.csv");
        assert_eq!(file_name(".."), "_...csv");
        assert_eq!(file_name(""), "_.csv");
        assert_eq!(file_name("é"), "_.csv");
    }
}

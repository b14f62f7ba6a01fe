//! Where a lake's files live: a local directory, or a prefix of S3-compatible object storage
//! (`s3://bucket/prefix`, through [`crate::object`]).
//!
//! [`LakeFiles`] is the lake writer's one access to its storage: listing a partition's part
//! numbers, reading the schema of its files, creating a file and committing it, reading a
//! file back (for a rewrite). The lake's layout and rules ([`super::lake`]) are the same on
//! both; what differs:
//!
//! | | local directory | object storage |
//! | --- | --- | --- |
//! | a file being written | `.part-NNNNN.parquet.tmp` beside its final name | an upload to the final key ([`crate::object::Upload`]), invisible until completed |
//! | commit | fsync, rename, fsync of the directory | completing the upload (one `PUT`, or the multipart upload's completion) |
//! | after a crash | `.tmp` files may be left (deletable) | nothing visible; a multipart upload's parts stay until aborted by a lifecycle rule |
//! | directories | created (and fsynced) | none: keys have the `schema=.../day=.../` prefixes |
//! | part numbers, existing schema | `read_dir` | listing the partition's prefix, the footer read by ranged `GET`s |
//! | rewrite on schema growth | into a `.tmp`, renamed over the file | a new upload to the same key, which replaces the object when complete |

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::Schema as ArrowSchema;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use super::ArrowCodecError;
use crate::fs::{commit_file, create_dirs, FsError};
use crate::object::{Object, ObjectChunks, ObjectError, ObjectUrl, Upload};

/// Where a file being written goes.
pub(super) enum FileSink {
    /// A local temporary file.
    Local(File),
    /// An object upload.
    Object(Upload),
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            FileSink::Local(f) => f.write(buf),
            FileSink::Object(u) => u.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            FileSink::Local(f) => f.write_all(buf),
            FileSink::Object(u) => u.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            FileSink::Local(f) => f.flush(),
            FileSink::Object(u) => u.flush(),
        }
    }
}

/// A buffered [`FileSink`], as the Parquet writer writes to it.
pub(super) type Buffered = BufWriter<FileSink>;

/// The storage of one lake (see the module docs).
pub(super) struct LakeFiles {
    /// The lake's root as given (a directory, or `s3://bucket/prefix`).
    root: PathBuf,
    /// The root's bucket and prefix, for a lake in object storage.
    object: Option<ObjectUrl>,
}

fn object_error(e: ObjectError) -> ArrowCodecError {
    ArrowCodecError::Object(e)
}

/// The part number of a file name `part-NNNNN.parquet`.
fn part_number(name: &str) -> Option<u32> {
    name.strip_prefix("part-")?
        .strip_suffix(".parquet")?
        .parse::<u32>()
        .ok()
}

impl LakeFiles {
    /// The storage of a lake rooted at `root` (`s3://` for object storage).
    pub fn new(root: &Path) -> Result<LakeFiles, ArrowCodecError> {
        let object = match root.to_str() {
            Some(text) if crate::object::is_url(text) => {
                Some(ObjectUrl::parse(text).map_err(object_error)?)
            }
            _ => None,
        };
        Ok(LakeFiles {
            root: root.to_path_buf(),
            object,
        })
    }

    /// The object key of `path` (under the root), for a lake in object storage.
    fn key(&self, url: &ObjectUrl, path: &Path) -> String {
        let text = path.to_string_lossy();
        let root = self.root.to_string_lossy();
        let rest = text.strip_prefix(&*root).unwrap_or(&text);
        let rest = rest.trim_start_matches('/');
        let prefix = url.key.trim_end_matches('/');
        match (prefix.is_empty(), rest.is_empty()) {
            (true, _) => rest.to_string(),
            (false, true) => prefix.to_string(),
            (false, false) => format!("{prefix}/{rest}"),
        }
    }

    /// The objects under the directory `dir` (recursively): (key relative to `dir`, size).
    fn list(&self, url: &ObjectUrl, dir: &Path) -> Result<Vec<(String, u64)>, ArrowCodecError> {
        let prefix = self.key(url, dir);
        let listed = crate::object::list(url, &prefix).map_err(object_error)?;
        Ok(listed
            .into_iter()
            .filter_map(|(key, size)| {
                let rest = key.strip_prefix(&prefix)?.trim_start_matches('/');
                Some((rest.to_string(), size))
            })
            .collect())
    }

    /// Creates the directory `dir` (and its missing parents up to the root); nothing in
    /// object storage.
    pub fn create_dirs(&self, dir: &Path) -> Result<(), ArrowCodecError> {
        match self.object {
            None => Ok(create_dirs(&self.root, dir)?),
            Some(_) => Ok(()),
        }
    }

    /// The highest `part-NNNNN.parquet` number in `dir`, plus one (0 for none).
    pub fn first_free_part(&self, dir: &Path) -> Result<u32, ArrowCodecError> {
        let names: Vec<String> = match &self.object {
            None => {
                let Ok(entries) = std::fs::read_dir(dir) else {
                    return Ok(0);
                };
                entries
                    .filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str().map(str::to_string))
                    .collect()
            }
            Some(url) => self
                .list(url, dir)?
                .into_iter()
                .filter(|(k, _)| !k.contains('/'))
                .map(|(k, _)| k)
                .collect(),
        };
        Ok(names
            .iter()
            .filter_map(|n| part_number(n))
            .max()
            .map_or(0, |n| n.saturating_add(1)))
    }

    /// The Arrow schema of the files already in the `schema=` partition `dir` (that of the
    /// highest-numbered `part-NNNNN.parquet` of its first `day=` directory that has one: the
    /// lake keeps one schema per partition), `None` when it has none.
    pub fn existing_schema(&self, dir: &Path) -> Result<Option<Arc<ArrowSchema>>, ArrowCodecError> {
        let unreadable =
            |path: &Path, e: parquet::errors::ParquetError| ArrowCodecError::Partition {
                dir: dir.to_path_buf(),
                problem: format!("cannot read the schema of {}: {e}", path.display()),
            };
        let Some(url) = &self.object else {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return Ok(None);
            };
            let mut days: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            days.sort();
            for day in days {
                let n = self.first_free_part(&day)?;
                if n == 0 {
                    continue;
                }
                let path = day.join(format!("part-{:05}.parquet", n - 1));
                let file = File::open(&path).map_err(|e| FsError::new("open", &path, e))?;
                let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                    .map_err(|e| unreadable(&path, e))?;
                return Ok(Some(builder.schema().clone()));
            }
            return Ok(None);
        };
        // (day directory, part number, size) of every part file.
        let mut parts: Vec<(String, u32, u64)> = self
            .list(url, dir)?
            .into_iter()
            .filter_map(|(rest, size)| {
                let (day, name) = rest.split_once('/')?;
                (!name.contains('/')).then_some(())?;
                Some((day.to_string(), part_number(name)?, size))
            })
            .collect();
        parts.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let Some((day, n, size)) = parts.into_iter().next() else {
            return Ok(None);
        };
        let path = dir.join(&day).join(format!("part-{n:05}.parquet"));
        let builder = ParquetRecordBatchReaderBuilder::try_new(self.chunks(url, &path, size))
            .map_err(|e| unreadable(&path, e))?;
        Ok(Some(builder.schema().clone()))
    }

    fn chunks(&self, url: &ObjectUrl, path: &Path, size: u64) -> ObjectChunks {
        let key = self.key(url, path);
        ObjectChunks::new(Object {
            url: url.url_of(&key),
            store: url.store.clone(),
            path: key.as_str().into(),
            size,
        })
    }

    /// Begins the file `dir/name`: locally a temporary `dir/.name.tmp` (returned), in object
    /// storage an upload to its final key.
    pub fn create(&self, dir: &Path, name: &str) -> Result<(FileSink, PathBuf), ArrowCodecError> {
        match &self.object {
            None => {
                let tmp = dir.join(format!(".{name}.tmp"));
                let file = File::create(&tmp).map_err(|e| FsError::new("create", &tmp, e))?;
                Ok((FileSink::Local(file), tmp))
            }
            Some(url) => {
                let path = dir.join(name);
                let upload = Upload::new(url, &self.key(url, &path));
                Ok((FileSink::Object(upload), path))
            }
        }
    }

    /// Completes a file begun by [`LakeFiles::create`] (its sink flushed): locally fsynced,
    /// renamed from `tmp` to `dir/name`, the directory fsynced; in object storage the upload
    /// completed. Returns the file's size.
    pub fn commit(
        &self,
        sink: FileSink,
        tmp: &Path,
        dir: &Path,
        name: &str,
    ) -> Result<u64, ArrowCodecError> {
        match sink {
            FileSink::Local(file) => {
                let path = commit_file(&file, tmp, dir, name, true)?;
                Ok(std::fs::metadata(&path).map_or(0, |m| m.len()))
            }
            FileSink::Object(upload) => upload.finish().map_err(object_error),
        }
    }

    /// Removes what a file begun and not committed left: the local temporary (an upload
    /// aborts when dropped).
    pub fn discard(&self, tmp: &Path) {
        if self.object.is_none() {
            let _ = std::fs::remove_file(tmp);
        }
    }

    /// The size of the completed file `dir/name`, 0 when unknown.
    pub fn size(&self, dir: &Path, name: &str) -> Result<u64, ArrowCodecError> {
        let path = dir.join(name);
        match &self.object {
            None => Ok(std::fs::metadata(&path).map_or(0, |m| m.len())),
            Some(url) => Ok(self
                .list(url, dir)?
                .into_iter()
                .find(|(k, _)| k == name)
                .map_or(0, |(_, size)| size)),
        }
    }

    /// Reads the completed file `dir/name` back in record batches of `batch_rows` rows.
    pub fn read(
        &self,
        dir: &Path,
        name: &str,
        batch_rows: usize,
    ) -> Result<ParquetRecordBatchReader, ArrowCodecError> {
        let path = dir.join(name);
        let reader = match &self.object {
            None => {
                let input = File::open(&path).map_err(|e| FsError::new("open", &path, e))?;
                ParquetRecordBatchReaderBuilder::try_new(input)?
                    .with_batch_size(batch_rows)
                    .build()?
            }
            Some(url) => {
                let size = self.size(dir, name)?;
                ParquetRecordBatchReaderBuilder::try_new(self.chunks(url, &path, size))?
                    .with_batch_size(batch_rows)
                    .build()?
            }
        };
        Ok(reader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_numbers() {
        assert_eq!(part_number("part-00012.parquet"), Some(12));
        assert_eq!(part_number(".part-00012.parquet.tmp"), None);
        assert_eq!(part_number("part-x.parquet"), None);
    }
}

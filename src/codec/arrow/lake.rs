//! The Parquet lake: events written as Hive-partitioned Parquet files, one directory per
//! schema and day.
//!
//! # Layout
//! ```text
//! DIR/
//!   schema=zeek.conn/
//!     day=2009-11-18/
//!       part-00000.parquet
//!       part-00001.parquet           the next file once part-00000 reached max_file_size
//!   schema=zeek.dns/
//!     day=2009-11-18/part-00000.parquet
//!     day=__HIVE_DEFAULT_PARTITION__/part-00000.parquet     events without a ts
//! ```
//! - **Partitions.** `schema` is the weir schema name, `day` the UTC day of the event's `ts`
//!   (the first `ts` field of type `time`); an event without one goes to
//!   `__HIVE_DEFAULT_PARTITION__`, Hive's and Spark's name for a null partition value. Engines
//!   reading the directory with Hive partitioning get `schema` and `day` as two more columns.
//!   (`day`, not `date`: Zeek's smtp.log has a field `date`, which an engine reading with Hive
//!   partitioning would silently replace by the partition's value; no Zeek log has a field
//!   `schema` or `day`.)
//! - **One schema per `schema=` partition.** Every file of a `schema=` partition has one
//!   Arrow schema (that of [`super::schema`], Zeek type names in the field metadata): the
//!   union of the fields of the weir schemas of that name, a field's values null in the rows
//!   of a schema without it, and one type per field name across the lake (the rules are in
//!   [`super::union`]). So each partition reads as one table in every engine, without
//!   `union_by_name`, and the whole lake with it (or the engine's equivalent). How the union
//!   is known:
//!   - `weir export` declares the archive's schemas before the first row
//!     ([`LakeWriter::declare`]): the files have the union from the start.
//!   - `weir convert --to parquet` and the `parquet` sink learn the schemas as they read:
//!     a partition's files get the schema of its first events, and when events of the name
//!     come with fields the files lack, the files written so far by this writer are rewritten
//!     with the larger schema when it completes (a batch at a time, each into a temporary
//!     renamed over the file). The lake is complete, one schema per partition, once the
//!     command ends (the sink: once the pipeline stops).
//!   - Appending to a lake (a second export, a restarted pipeline): when a partition already
//!     holds files, their schema is kept; events whose fields fit it (a subset, types equal
//!     or widening) are written with it, the rest is null. Events with a field the files lack,
//!     or of a type that does not fit, are refused with an error naming the partition and the
//!     column: write them to a new directory (files written earlier are never rewritten).
//!   - Across schema names, `weir export` gives a field name one type in the whole lake
//!     (the union over the archive's schemas); a convert or sink, which cannot know the
//!     schemas to come, relies on Zeek's field conventions for that (a `*_p` number is a
//!     port whether typed or inferred: [`crate::codec::zeek::schema::number_kind`]).
//!   - Schemas of one name with a field whose types have no union (a `bool` and a `count`)
//!     are refused for a partition begun by a convert or sink; `weir export` writes such a
//!     name with a schema per field list, as before, and warns.
//! - **Files.** A file is closed, and the partition's next file begun, when its size reaches
//!   `max_file_size` (checked after each row group: the file ends with the row group that
//!   made it reach the size, whatever record batches the rows came in), when the partition's
//!   schema grows (above), when more than [`LakeWriter::MAX_OPEN_FILES`] files are open (the
//!   least recently written is closed), and at the end. Rows of the schemas of one name share
//!   files, in arrival order. Part numbers continue after the highest one already in the
//!   directory, so a second export or a restarted pipeline adds files and never replaces one.
//! - **Parquet.** zstd-compressed (level `compression_level`), row groups of
//!   `row_group_size` rows (the last of a file fewer), plain encoding in data pages of up to
//!   1 MiB, column statistics (engines skip row groups by min/max). No dictionary
//!   encoding: zstd over larger plain pages finds the same repetition, and on Zeek logs
//!   the files came out smaller (conn.log: 0.75 MB instead of 0.81 MB; W1000: 17 MB instead
//!   of 19 MB, and 60 MB with arrow-rs's default pages of 20,000 rows) for 10% less CPU. The
//!   columns of a file are encoded on several threads (one per core, at most four; see
//!   `parquet_file.rs`), and with a [`super::ParallelLakeWriter`] (`weir export`) the record
//!   batches are built on a thread per core; the bytes depend on neither number.
//! - **Atomic.** A file is written as `.part-NNNNN.parquet.tmp` in its directory (a hidden
//!   name that Spark, DuckDB and DataFusion ignore) and renamed to its final name once
//!   complete, after an fsync; the directory is fsynced after the rename (`fs::commit_file`),
//!   and new directories after their creation. A reader never sees a partial file; after a
//!   crash, `.tmp` files may be left behind and can be deleted.
//! - **Memory.** Per open file: the record batch being built (at most
//!   [`LakeWriter::BATCH_ROWS`] rows; with a [`super::ParallelLakeWriter`], the batches being
//!   converted instead, at most four per thread of at most one input batch each), one data
//!   page being filled per column (at most 1 MiB each, uncompressed) and the compressed pages
//!   of the row group being written (at most `row_group_size` rows); at most
//!   [`LakeWriter::MAX_OPEN_FILES`] files are open. So memory is bounded by the row-group size
//!   and the schemas' widths, never by the archive. `bench/lake.sh` measures it: exporting
//!   W1000 (8.5 M events) with the default row groups peaks at about 125 MB beyond the mapped
//!   archive, 30,720-row groups at 70 MB, 491,520-row groups at 180 MB; a tenth of the events
//!   at 100 MB. What still grows with the events is glibc's: with its thresholds fixed
//!   (`MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072`) the
//!   peak is 50 MB for 0.85 M events and 61 MB for 8.5 M (57 MB at 2.1 M, 59 MB at 4.2 M), the
//!   rest being the footer's metadata, per row group.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use arrow_array::RecordBatch;
use arrow_schema::Schema as ArrowSchema;

use super::builder::ArrowBuilder;
use super::lake_files::LakeFiles;
use super::lake_rows::LakeRows;
use super::parquet_file::ParquetFile;
use super::partition_day::row_day;
use super::schema::{arrow_schema, zeek_schema};
use super::union::{conform, fits, lake_schemas, misfit, Conflict};
use super::ArrowCodecError;
use crate::codec::zeek::scalar::civil_from_days;
use crate::types::SchemaRef;

/// Settings of a [`LakeWriter`] (checked by the configuration that makes it,
/// `ParquetSinkConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LakeOptions {
    /// The lake's root directory (created when missing).
    pub dir: PathBuf,
    /// A file is closed once it holds this many bytes.
    pub max_file_size: u64,
    /// Rows per row group at most.
    pub row_group_size: usize,
    /// zstd level.
    pub compression_level: i32,
}

/// What a [`LakeWriter`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LakeSummary {
    /// Events written.
    pub events: u64,
    /// Files completed.
    pub files: u64,
    /// Bytes of the completed files.
    pub bytes: u64,
}

/// A partition (schema, day) with its builder and open file.
struct Partition {
    /// The schema of the rows being built (one of those the partition's schema unites).
    schema: SchemaRef,
    day: Option<i64>,
    dir: PathBuf,
    /// The Arrow schema of the partition's files.
    target: Arc<ArrowSchema>,
    builder: ArrowBuilder,
    file: Option<ParquetFile>,
    last_use: u64,
}

/// Writes events into a Parquet lake (see the module docs). Blocking: run it on a thread of
/// its own in async code (the Parquet sink does).
pub struct LakeWriter {
    options: LakeOptions,
    /// Where the files go: the directory or the object storage prefix `options.dir`.
    files: LakeFiles,
    props: Arc<WriterProperties>,
    parts: Vec<Partition>,
    /// Next part number of each partition directory.
    next_part: HashMap<PathBuf, u32>,
    /// The lake's Arrow schema of each schema name declared ahead ([`LakeWriter::declare`]).
    declared: HashMap<String, Arc<ArrowSchema>>,
    /// The Arrow schema of the files of each schema name written to (its `schema=`
    /// partition).
    name_target: HashMap<String, Arc<ArrowSchema>>,
    /// Declared schema names whose schemas have no union: each field list has its own
    /// Arrow schema (kept here, shared by its files).
    conflicted: HashMap<String, Vec<(SchemaRef, Arc<ArrowSchema>)>>,
    /// Schema names whose partition held files before this writer: their schema is fixed.
    preexisting: HashSet<String>,
    /// The files completed (schema name, directory, file name) with their Arrow schema:
    /// those of a schema other than their name's final one are rewritten at the end.
    written: Vec<(String, PathBuf, String, Arc<ArrowSchema>)>,
    clock: u64,
    summary: LakeSummary,
}

impl std::fmt::Debug for LakeWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LakeWriter")
            .field("options", &self.options)
            .field("open", &self.parts.len())
            .field("summary", &self.summary)
            .finish()
    }
}

/// The partition directory name of a day (`day=2009-11-18`), or of no day.
fn date_dir(day: Option<i64>) -> String {
    match day {
        Some(d) => {
            let (y, m, dd) = civil_from_days(d);
            format!("day={y:04}-{m:02}-{dd:02}")
        }
        None => "day=__HIVE_DEFAULT_PARTITION__".to_string(),
    }
}

/// A schema name as one safe path component (`/` and NUL replaced).
fn schema_dir(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| if c == '/' || c == '\0' { '_' } else { c })
        .collect();
    format!("schema={safe}")
}

impl LakeWriter {
    /// Rows of one record batch handed to the Parquet writer.
    pub const BATCH_ROWS: usize = 8192;
    /// Files open at once; writing to one more closes the least recently written.
    pub const MAX_OPEN_FILES: usize = 16;

    /// A writer into `options.dir`; the directory is created on the first event.
    pub fn new(options: LakeOptions) -> Result<LakeWriter, ArrowCodecError> {
        let level = ZstdLevel::try_new(options.compression_level)?;
        // No dictionaries, pages cut by size only: zstd finds the repetition itself, in larger
        // pages; on Zeek logs this is smaller and cheaper (see the module docs).
        let props = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(usize::MAX)
            .set_compression(Compression::ZSTD(level))
            .set_max_row_group_row_count(Some(options.row_group_size.max(1)))
            .set_created_by(format!("weir {}", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(LakeWriter {
            files: LakeFiles::new(&options.dir)?,
            options,
            props: Arc::new(props),
            parts: Vec::new(),
            next_part: HashMap::new(),
            declared: HashMap::new(),
            name_target: HashMap::new(),
            conflicted: HashMap::new(),
            preexisting: HashSet::new(),
            written: Vec::new(),
            clock: 0,
            summary: LakeSummary::default(),
        })
    }

    /// What was written so far (files: completed ones).
    pub fn summary(&self) -> &LakeSummary {
        &self.summary
    }

    /// Declares the schemas to come (`weir export` knows them from the archive's catalog):
    /// the files of each schema name get the union of its schemas' fields from the start, with
    /// one type per field name across the lake ([`super::union::lake_schemas`]). Returns the
    /// schema names whose schemas have a field without a common type (their partitions are
    /// written with a schema per field list, as files of one schema each).
    pub fn declare(&mut self, schemas: &[SchemaRef]) -> Vec<(String, Conflict)> {
        let (united, conflicts) = lake_schemas(schemas);
        self.declared.extend(united);
        for (name, _) in &conflicts {
            self.conflicted.entry(name.clone()).or_default();
        }
        conflicts
    }

    /// Appends rows of `schema` (msgpack rows, see [`crate::value`]) to their partitions.
    /// An error (a row not of the schema, a failed write) leaves the lake with the files
    /// completed so far; the writer must not be used further.
    pub fn write_rows<'a>(
        &mut self,
        schema: &SchemaRef,
        rows: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), ArrowCodecError> {
        let ts_index = schema.ts_index();
        let mut cached: Option<(Option<i64>, usize)> = None;
        for (i, row) in rows.enumerate() {
            let day = row_day(row, schema, ts_index);
            let index = match cached {
                Some((d, index)) if d == day => index,
                _ => {
                    let index = self.partition(schema, day)?;
                    cached = Some((day, index));
                    index
                }
            };
            let part = &mut self.parts[index];
            part.builder
                .append(row)
                .map_err(|source| ArrowCodecError::Decode {
                    schema: schema.name.clone(),
                    row: i,
                    source,
                })?;
            self.summary.events += 1;
            if part.builder.len() >= Self::BATCH_ROWS || part.builder.is_full() {
                self.write_batch(index)?;
            }
        }
        Ok(())
    }

    /// Appends rows converted to record batches away from this thread ([`LakeRows`], see
    /// [`super::ParallelLakeWriter`]) to their partitions, after the rows given to
    /// [`LakeWriter::write_rows`] before. The files are the same as if the rows had been given
    /// to [`LakeWriter::write_rows`] (the same rows in the same files, row groups and order),
    /// unless more than [`LakeWriter::MAX_OPEN_FILES`] partitions are in use at once: then
    /// the least recently written one is chosen among the partitions of whole batches rather
    /// than of rows.
    pub(super) fn write_converted(&mut self, rows: LakeRows) -> Result<(), ArrowCodecError> {
        let (schema, batches) = rows.into_parts();
        for (day, rb) in batches {
            let index = self.partition(&schema, day)?;
            self.write_batch(index)?;
            self.summary.events += rb.num_rows() as u64;
            self.write_record_batch(index, &rb)?;
        }
        Ok(())
    }

    /// The index of the open partition of `schema` and `day`, opened (and another one closed
    /// when too many are open) as needed.
    fn partition(
        &mut self,
        schema: &SchemaRef,
        day: Option<i64>,
    ) -> Result<usize, ArrowCodecError> {
        self.clock += 1;
        let clock = self.clock;
        if let Some(i) = self
            .parts
            .iter()
            .position(|p| p.day == day && (Arc::ptr_eq(&p.schema, schema) || *p.schema == **schema))
        {
            self.parts[i].last_use = clock;
            return Ok(i);
        }
        let dir = self
            .options
            .dir
            .join(schema_dir(&schema.name))
            .join(date_dir(day));
        let target = self.target(schema)?;
        if let Some(i) = self.parts.iter().position(|p| p.dir == dir) {
            if Arc::ptr_eq(&self.parts[i].target, &target) {
                // Another schema of the name, whose rows go into the same file.
                self.write_batch(i)?;
                let part = &mut self.parts[i];
                part.schema = schema.clone();
                part.builder = ArrowBuilder::new(schema.clone());
                part.last_use = clock;
                return Ok(i);
            }
            // The partition's schema grew: its file ends here.
            self.close_partition(i)?;
        }
        self.name_target.insert(schema.name.clone(), target.clone());
        if self.parts.len() >= Self::MAX_OPEN_FILES {
            if let Some(i) = self
                .parts
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.last_use)
                .map(|(i, _)| i)
            {
                self.close_partition(i)?;
            }
        }
        self.parts.push(Partition {
            schema: schema.clone(),
            day,
            dir,
            target,
            builder: ArrowBuilder::new(schema.clone()),
            file: None,
            last_use: clock,
        });
        Ok(self.parts.len() - 1)
    }

    /// The Arrow schema of the files of the `schema=` partition of `schema`'s name for rows
    /// of `schema`: the one its files have so far when `schema` fits it; else, for a
    /// partition begun by this writer, the union of the two (the files written before are
    /// rewritten at the end); for a new partition the declared one of the schema's name, or
    /// the schema's own, or, when the directory already holds files, theirs (which it must
    /// fit).
    fn target(&mut self, schema: &SchemaRef) -> Result<Arc<ArrowSchema>, ArrowCodecError> {
        if let Some(own) = self.conflicted.get_mut(&schema.name) {
            if let Some((_, a)) = own.iter().find(|(s, _)| **s == **schema) {
                return Ok(a.clone());
            }
            let a = Arc::new(arrow_schema(schema));
            own.push((schema.clone(), a.clone()));
            return Ok(a);
        }
        let dir = self.options.dir.join(schema_dir(&schema.name));
        let refuse = |problem: String| ArrowCodecError::Partition {
            dir: dir.clone(),
            problem,
        };
        if let Some(t) = self.name_target.get(&schema.name) {
            if fits(schema, t) {
                return Ok(t.clone());
            }
            if self.preexisting.contains(&schema.name) {
                let why = misfit(&arrow_schema(schema), t).unwrap_or_default();
                return Err(refuse(format!(
                    "its files, written before, have another schema than the events of {} \
                     ({why}); write to a new directory (or export the whole archive into an \
                     empty one)",
                    schema.name
                )));
            }
            let old = zeek_schema(t, &schema.name)?.into_shared();
            let (mut united, conflicts) = lake_schemas(&[old, schema.clone()]);
            if let Some((_, c)) = conflicts.first() {
                return Err(refuse(format!(
                    "{c} (schemas of {} in one partition need one type per field); import \
                     into an archive and export from there, or write the schemas to separate \
                     directories",
                    schema.name
                )));
            }
            return united
                .remove(&schema.name)
                .ok_or_else(|| refuse("no united schema".into()));
        }
        let mine = match self.declared.get(&schema.name) {
            Some(t) if fits(schema, t) => t.clone(),
            _ => Arc::new(arrow_schema(schema)),
        };
        let Some(existing) = self.files.existing_schema(&dir)? else {
            return Ok(mine);
        };
        self.preexisting.insert(schema.name.clone());
        match misfit(&mine, &existing) {
            None => Ok(existing),
            Some(why) => Err(refuse(format!(
                "its files, written before, have another schema than the events of {} ({why}); \
                 write to a new directory (or export the whole archive into an empty one)",
                schema.name
            ))),
        }
    }

    /// Writes the rows built for partition `index` as a record batch into its files.
    fn write_batch(&mut self, index: usize) -> Result<(), ArrowCodecError> {
        let part = &mut self.parts[index];
        if part.builder.is_empty() {
            return Ok(());
        }
        let rb = part.builder.finish()?;
        self.write_record_batch(index, &rb)
    }

    /// Appends `rb` (of the partition's schema) to the open file of partition `index`,
    /// opening one as needed, and closes a file at the end of the first row group that makes
    /// it reach `max_file_size` (the rest of `rb` goes to the partition's next file). So the
    /// files do not depend on how the rows were cut into record batches.
    fn write_record_batch(
        &mut self,
        index: usize,
        rb: &RecordBatch,
    ) -> Result<(), ArrowCodecError> {
        let rb = &conform(rb, &self.parts[index].target)?;
        let mut offset = 0;
        while offset < rb.num_rows() {
            let file = self.open_file(index)?;
            let n = (rb.num_rows() - offset).min(file.rows_to_group_end());
            file.write(&rb.slice(offset, n))?;
            offset += n;
            // The size grows only when a row group is complete.
            if file.bytes_written() as u64 >= self.options.max_file_size {
                self.close_file(index)?;
            }
        }
        Ok(())
    }

    /// The open file of partition `index`, begun (with its directory) when there is none.
    fn open_file(&mut self, index: usize) -> Result<&mut ParquetFile, ArrowCodecError> {
        let part = &mut self.parts[index];
        if let Some(file) = part.file.take() {
            return Ok(part.file.insert(file));
        }
        self.files.create_dirs(&part.dir)?;
        let n = match self.next_part.get_mut(&part.dir) {
            Some(n) => n,
            None => {
                let first = self.files.first_free_part(&part.dir)?;
                self.next_part.entry(part.dir.clone()).or_insert(first)
            }
        };
        let name = format!("part-{:05}.parquet", *n);
        *n = n.saturating_add(1);
        let (file, tmp) = self.files.create(&part.dir, &name)?;
        let file = ParquetFile::create(file, tmp, name, part.target.clone(), &self.props)?;
        Ok(part.file.insert(file))
    }

    /// Completes the open file of partition `index`: written, fsynced, renamed, directory
    /// fsynced (in object storage: uploaded, the upload completed).
    fn close_file(&mut self, index: usize) -> Result<(), ArrowCodecError> {
        let part = &mut self.parts[index];
        let Some(open) = part.file.take() else {
            return Ok(());
        };
        let (tmp, name) = (open.tmp.clone(), open.name.clone());
        let file = open.finish()?;
        let size = self.files.commit(file, &tmp, &part.dir, &name)?;
        self.written.push((
            part.schema.name.clone(),
            part.dir.clone(),
            name,
            part.target.clone(),
        ));
        self.summary.files += 1;
        self.summary.bytes += size;
        Ok(())
    }

    /// Writes out and closes partition `index`, and forgets it.
    fn close_partition(&mut self, index: usize) -> Result<(), ArrowCodecError> {
        self.write_batch(index)?;
        self.close_file(index)?;
        self.parts.swap_remove(index);
        Ok(())
    }

    /// Writes out every partition and completes every open file. The writer can be used
    /// again afterwards (for new files).
    pub fn close_all(&mut self) -> Result<(), ArrowCodecError> {
        while !self.parts.is_empty() {
            self.close_partition(self.parts.len() - 1)?;
        }
        // Files written before their partition's schema grew get the final one.
        for (schema_name, dir, name, schema) in std::mem::take(&mut self.written) {
            let Some(target) = self.name_target.get(&schema_name).cloned() else {
                continue;
            };
            if !Arc::ptr_eq(&schema, &target) && !self.conflicted.contains_key(&schema_name) {
                self.rewrite(&dir, &name, &target)?;
            }
        }
        Ok(())
    }

    /// Rewrites the completed file `dir/name` with the Arrow schema `target` (which its own
    /// fits): a batch at a time into a temporary, renamed over it once complete (in object
    /// storage: an upload to the same key, which replaces the object once complete).
    fn rewrite(
        &mut self,
        dir: &Path,
        name: &str,
        target: &Arc<ArrowSchema>,
    ) -> Result<(), ArrowCodecError> {
        let old_size = self.files.size(dir, name)?;
        let reader = self.files.read(dir, name, Self::BATCH_ROWS)?;
        let (file, tmp) = self.files.create(dir, name)?;
        let mut out = ParquetFile::create(
            file,
            tmp.clone(),
            name.to_string(),
            target.clone(),
            &self.props,
        )?;
        let result = (|| {
            for rb in reader {
                let rb = conform(&rb?, target)?;
                let mut offset = 0;
                while offset < rb.num_rows() {
                    let n = (rb.num_rows() - offset).min(out.rows_to_group_end());
                    out.write(&rb.slice(offset, n))?;
                    offset += n;
                }
            }
            out.finish()
        })();
        let file = match result {
            Ok(f) => f,
            Err(e) => {
                self.files.discard(&tmp);
                return Err(e);
            }
        };
        let new_size = self.files.commit(file, &tmp, dir, name)?;
        self.summary.bytes = (self.summary.bytes + new_size).saturating_sub(old_size);
        Ok(())
    }

    /// Completes every file and returns what was written.
    pub fn close(mut self) -> Result<LakeSummary, ArrowCodecError> {
        self.close_all()?;
        Ok(self.summary.clone())
    }
}

impl Drop for LakeWriter {
    /// Files not completed by [`LakeWriter::close`] (after an error) are removed: only
    /// complete files have final names, and temporaries would only take space.
    fn drop(&mut self) {
        for p in &mut self.parts {
            if let Some(open) = p.file.take() {
                let tmp = open.tmp.clone();
                // An upload is aborted as it is dropped.
                drop(open);
                self.files.discard(&tmp);
            }
        }
    }
}

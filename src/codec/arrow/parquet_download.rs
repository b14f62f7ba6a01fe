//! One Parquet file of a query's events, whatever their schemas: the download of `weir serve`
//! (`POST /api/v1/query` with `"format": "parquet"`, the page's Parquet button).
//!
//! A Parquet file has one schema and its footer comes last, so the events are held as Arrow
//! record batches until [`EventWriter::try_finish`], then written as one file:
//!
//! - **One schema name**: the file's columns are that name's fields, united as the lake unites
//!   them ([`super::union::lake_schemas`]: a schema that gained fields mid-log adds them,
//!   null where a batch lacks them), with the lake's types and metadata, so the file reads
//!   back into weir and into DuckDB, Polars or pyarrow as a lake file does.
//! - **Several schema names** (a timeline across logs): a first column `#type` (the schema
//!   name of each row, as `weir export --to csv` writes it), then the union of every field name
//!   in order of first appearance, each with the type [`super::union::unite_types`] gives it
//!   over all the schemas. A field whose types have no union (`bool` in one schema, `count` in
//!   another) is refused when its second schema arrives ([`WriteError::Column`], naming the
//!   field, the two types and the way out: one schema at a time, `#type == "..."`): a column
//!   of one type cannot hold both, and turning one into text would change the data silently.
//! - zstd (level 3), rows in the order of the query (row groups of
//!   [`DOWNLOAD_ROW_GROUP_ROWS`]); no events: a file with no columns and no rows.
//!
//! The held batches are counted ([`EventWriter::buffered_bytes`]) so that the server's
//! response cap bounds them as it bounds what it has sent.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field as ArrowField, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::schema::arrow_schema;
use super::union::{conform, lake_schemas, unite_types};
use super::ArrowForm;
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::types::{Field, Schema, SchemaRef, Type};

/// Rows per row group of a downloaded file.
pub const DOWNLOAD_ROW_GROUP_ROWS: usize = 122_880;

/// The name of the column of the schema names, when a file holds several.
pub const TYPE_COLUMN: &str = "#type";

/// Holds a query's events and writes them as one Parquet file (see the module docs).
pub struct ParquetDownload {
    rows: RowBatches,
    /// Each schema seen, once (by value), in order of first appearance.
    schemas: Vec<SchemaRef>,
    /// The union of every field name so far, with its united type.
    fields: Vec<Field>,
    /// The batches, each with the index of its schema in `schemas`.
    held: Vec<(usize, RecordBatch)>,
    bytes: usize,
}

impl Default for ParquetDownload {
    fn default() -> Self {
        ParquetDownload {
            rows: RowBatches::new(ArrowForm::Interchange),
            schemas: Vec::new(),
            fields: Vec::new(),
            held: Vec::new(),
            bytes: 0,
        }
    }
}

impl std::fmt::Debug for ParquetDownload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetDownload")
            .field("schemas", &self.schemas.len())
            .field("batches", &self.held.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

fn parquet_error(e: impl std::error::Error + Send + Sync + 'static) -> WriteError {
    WriteError::Io(std::io::Error::other(format!("parquet: {e}")))
}

impl ParquetDownload {
    /// A writer holding nothing yet.
    pub fn new() -> ParquetDownload {
        ParquetDownload::default()
    }

    /// The index of `schema` in `schemas`, adding it (and uniting its fields) when new.
    fn schema_index(&mut self, schema: &SchemaRef) -> Result<usize, WriteError> {
        if let Some(i) = self
            .schemas
            .iter()
            .position(|s| Arc::ptr_eq(s, schema) || **s == **schema)
        {
            return Ok(i);
        }
        let mut fields = self.fields.clone();
        for f in &schema.fields {
            match fields.iter_mut().find(|g| g.name == f.name) {
                None => fields.push(f.clone()),
                Some(g) => match unite_types(&g.ty, &f.ty) {
                    Some(t) => g.ty = t,
                    None => return Err(conflict(schema, f, &g.ty, &self.schemas)),
                },
            }
        }
        self.fields = fields;
        self.schemas.push(schema.clone());
        Ok(self.schemas.len() - 1)
    }

    /// The Arrow schema of the file and, per held schema, the Arrow schema its batches are
    /// fitted to (the file's, without `#type` when there is one).
    fn targets(&self) -> (Arc<ArrowSchema>, Vec<Arc<ArrowSchema>>) {
        let names: Vec<&str> = {
            let mut names: Vec<&str> = Vec::new();
            for s in &self.schemas {
                if !names.contains(&s.name.as_str()) {
                    names.push(&s.name);
                }
            }
            names
        };
        if names.len() == 1 {
            let (by_name, _) = lake_schemas(&self.schemas);
            if let Some(one) = by_name.get(names[0]) {
                return (one.clone(), vec![one.clone(); self.schemas.len()]);
            }
        }
        let united = Arc::new(arrow_schema(&Schema::new(
            "weir.download".to_string(),
            self.fields.clone(),
        )));
        let mut columns: Vec<Arc<ArrowField>> = vec![Arc::new(ArrowField::new(
            TYPE_COLUMN,
            DataType::Utf8,
            false,
        ))];
        columns.extend(united.fields().iter().cloned());
        let file = Arc::new(ArrowSchema::new_with_metadata(
            columns,
            united.metadata().clone(),
        ));
        (file, vec![united; self.schemas.len()])
    }
}

/// The refusal of a field whose type in `schema` has no union with its type so far.
fn conflict(schema: &Schema, field: &Field, before: &Type, seen: &[SchemaRef]) -> WriteError {
    let other = seen
        .iter()
        .find(|s| s.fields.iter().any(|g| g.name == field.name))
        .map(|s| s.name.as_str())
        .unwrap_or("an earlier schema");
    WriteError::Column {
        schema: schema.name.clone(),
        field: field.name.clone(),
        problem: format!(
            "field {} is {} here and {before} in {other}, which one Parquet column cannot both hold; download one schema at a time (add `#type == \"{}\"`)",
            field.name, field.ty, schema.name
        ),
    }
}

impl EventWriter for ParquetDownload {
    fn write_record_batch(
        &mut self,
        schema: &SchemaRef,
        batch: &RecordBatch,
        _out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let i = self.schema_index(schema)?;
        if batch.num_rows() > 0 {
            self.bytes += batch.get_array_memory_size();
            self.held.push((i, batch.clone()));
        }
        Ok(())
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        write_rows(self, |w| &mut w.rows, schema, rows, out)
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if let Err(e) = self.try_finish(out) {
            tracing::error!("cannot write the Parquet file: {e}");
        }
    }

    fn try_finish(&mut self, out: &mut Vec<u8>) -> Result<(), WriteError> {
        let (file, targets) = self.targets();
        let held = std::mem::take(&mut self.held);
        let schemas = std::mem::take(&mut self.schemas);
        self.fields.clear();
        self.bytes = 0;
        let typed = file.fields().first().map(|f| f.name().as_str()) == Some(TYPE_COLUMN)
            && file.fields().len() > targets.first().map_or(0, |t| t.fields().len());
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(3).map_err(parquet_error)?,
            ))
            .set_max_row_group_row_count(Some(DOWNLOAD_ROW_GROUP_ROWS))
            .set_created_by(format!("weir {}", env!("CARGO_PKG_VERSION")))
            .build();
        let mut writer =
            ArrowWriter::try_new(Vec::new(), file.clone(), Some(props)).map_err(parquet_error)?;
        for (i, rb) in held {
            let fitted = conform(&rb, &targets[i]).map_err(|e| WriteError::Column {
                schema: schemas[i].name.clone(),
                field: String::new(),
                problem: e.to_string(),
            })?;
            let fitted = if typed {
                let names: ArrayRef = Arc::new(StringArray::from(vec![
                    schemas[i].name.as_str();
                    fitted.num_rows()
                ]));
                let mut columns = vec![names];
                columns.extend(fitted.columns().iter().cloned());
                RecordBatch::try_new(file.clone(), columns).map_err(parquet_error)?
            } else {
                fitted
            };
            writer.write(&fitted).map_err(parquet_error)?;
        }
        out.extend_from_slice(&writer.into_inner().map_err(parquet_error)?);
        Ok(())
    }

    fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    fn record_batch_form(&self) -> ArrowForm {
        ArrowForm::Interchange
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{encode_row, Value};
    use bytes::Bytes;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    fn schema(name: &str, fields: &[(&str, Type)]) -> SchemaRef {
        Arc::new(Schema::new(
            name.to_string(),
            fields
                .iter()
                .map(|(n, t)| Field::new(n.to_string(), t.clone()))
                .collect(),
        ))
    }

    fn rows(values: &[Vec<Value>]) -> Vec<Vec<u8>> {
        values
            .iter()
            .map(|row| {
                let mut buf = Vec::new();
                encode_row(row, &mut buf);
                buf
            })
            .collect()
    }

    fn write(
        w: &mut ParquetDownload,
        s: &SchemaRef,
        values: &[Vec<Value>],
    ) -> Result<(), WriteError> {
        let rows = rows(values);
        let mut it = rows.iter().map(|r| r.as_slice());
        w.write_rows(s, &mut it, &mut Vec::new())
    }

    fn read(bytes: Vec<u8>) -> Vec<RecordBatch> {
        ParquetRecordBatchReaderBuilder::try_new(Bytes::from(bytes))
            .expect("a parquet file")
            .build()
            .expect("reader")
            .collect::<Result<Vec<_>, _>>()
            .expect("batches")
    }

    #[test]
    fn one_schema_is_its_columns_and_several_get_a_type_column() {
        let conn = schema(
            "zeek.conn",
            &[("uid", Type::String), ("orig_bytes", Type::Count)],
        );
        let dns = schema(
            "zeek.dns",
            &[("uid", Type::String), ("query", Type::String)],
        );
        let mut w = ParquetDownload::new();
        write(
            &mut w,
            &conn,
            &[vec![Value::String(b"C1".to_vec()), Value::Count(5)]],
        )
        .expect("conn");
        let mut out = Vec::new();
        w.try_finish(&mut out).expect("finish");
        let got = read(out);
        let names: Vec<_> = got[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["uid", "orig_bytes"]);
        assert_eq!(got[0].num_rows(), 1);

        // The writer starts over after a finish: now two schemas, in the query's order.
        write(
            &mut w,
            &conn,
            &[vec![Value::String(b"C1".to_vec()), Value::Count(5)]],
        )
        .expect("conn");
        write(
            &mut w,
            &dns,
            &[vec![
                Value::String(b"C1".to_vec()),
                Value::String(b"a.example".to_vec()),
            ]],
        )
        .expect("dns");
        assert!(w.buffered_bytes() > 0);
        let mut out = Vec::new();
        w.try_finish(&mut out).expect("finish");
        let got = read(out);
        let rb = arrow_select::concat::concat_batches(&got[0].schema(), &got).expect("concat");
        let names: Vec<_> = rb
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["#type", "uid", "orig_bytes", "query"]);
        let types = rb
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("utf8");
        assert_eq!(
            types.iter().collect::<Vec<_>>(),
            [Some("zeek.conn"), Some("zeek.dns")]
        );
        assert_eq!(rb.column(2).null_count(), 1, "dns has no orig_bytes");
        assert_eq!(rb.column(3).null_count(), 1, "conn has no query");
    }

    #[test]
    fn a_field_of_two_types_without_a_union_is_refused_naming_it() {
        let a = schema("x.a", &[("flag", Type::Bool)]);
        let b = schema("x.b", &[("flag", Type::Count)]);
        let mut w = ParquetDownload::new();
        write(&mut w, &a, &[vec![Value::Bool(true)]]).expect("a");
        let e = write(&mut w, &b, &[vec![Value::Count(1)]]).expect_err("no union");
        let text = e.to_string();
        assert!(
            text.contains("field flag is count here and bool in x.a"),
            "{text}"
        );
        assert!(text.contains("#type == \"x.b\""), "{text}");
    }

    #[test]
    fn no_events_is_a_file_without_rows() {
        let mut out = Vec::new();
        ParquetDownload::new().try_finish(&mut out).expect("finish");
        assert!(out.starts_with(b"PAR1"));
        assert!(read(out).iter().all(|b| b.num_rows() == 0));
    }
}

//! Msgpack rows of one schema to an Arrow [`RecordBatch`], column by column, without
//! materializing [`crate::value::Value`]s.

use std::fmt::Write as _;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::types::{
    DurationNanosecondType, Float64Type, Int64Type, TimestampNanosecondType, UInt16Type, UInt64Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, ListArray, PrimitiveArray,
    RecordBatch, StringArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Schema as ArrowSchema};

use super::schema::{arrow_schema, exact_arrow_schema, interval_seconds};
use super::ArrowCodecError;
use crate::codec::zeek::scalar::{push_addr, push_subnet};
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, ValueRef, NIL};

/// Appends `bytes` to `out` as text: valid UTF-8 as it is, each byte of an invalid sequence as
/// the four characters `\xHH` (lowercase hex). The decoded strings of the JSON writer
/// ([`crate::codec::json_writer`]) are the same text.
pub fn push_escaped_utf8(out: &mut String, bytes: &[u8]) {
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            // Writing to a String cannot fail.
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

/// Which values of a column are set, one `bool` a value until the batch is finished (cheaper
/// to append than bits), with the buffer's capacity kept from batch to batch.
struct Validity {
    valid: Vec<bool>,
    nulls: usize,
}

impl Validity {
    fn new() -> Validity {
        Validity {
            valid: Vec::new(),
            nulls: 0,
        }
    }

    #[inline(always)]
    fn append_non_null(&mut self) {
        self.valid.push(true);
    }

    #[inline(always)]
    fn append_null(&mut self) {
        self.valid.push(false);
        self.nulls += 1;
    }

    /// The null buffer (`None` when every value is set); empty again afterwards.
    fn finish(&mut self) -> Option<NullBuffer> {
        let nulls = (self.nulls > 0).then(|| NullBuffer::from(self.valid.as_slice()));
        self.valid.clear();
        self.nulls = 0;
        nulls
    }
}

/// A `bool` column.
struct BoolColumn {
    values: Vec<bool>,
    nulls: Validity,
}

impl BoolColumn {
    #[inline(always)]
    fn append_value(&mut self, v: bool) {
        self.values.push(v);
        self.nulls.append_non_null();
    }

    #[inline(always)]
    fn append_null(&mut self) {
        self.values.push(false);
        self.nulls.append_null();
    }

    fn finish(&mut self) -> BooleanArray {
        let values = BooleanBuffer::from(self.values.as_slice());
        self.values.clear();
        BooleanArray::new(values, self.nulls.finish())
    }
}

/// A `utf8` column built from raw bytes: values appended as they are, checked as UTF-8 once
/// per batch (by Arrow, over the whole buffer); only when that fails are the strings escaped
/// one by one ([`push_escaped_utf8`]). The buffers keep their capacity from batch to batch.
struct TextColumn {
    values: Vec<u8>,
    offsets: Vec<i32>,
    nulls: Validity,
}

impl TextColumn {
    fn new() -> TextColumn {
        TextColumn {
            values: Vec::new(),
            offsets: vec![0],
            nulls: Validity::new(),
        }
    }

    #[inline(always)]
    fn end_value(&mut self) {
        // A batch holds less than `ArrowBuilder::MAX_BYTES` (plus one row) of text.
        self.offsets
            .push(i32::try_from(self.values.len()).unwrap_or(i32::MAX));
        self.nulls.append_non_null();
    }

    #[inline]
    fn append_null(&mut self) {
        self.offsets
            .push(i32::try_from(self.values.len()).unwrap_or(i32::MAX));
        self.nulls.append_null();
    }

    /// The values as they are, as a `binary` column.
    fn finish_binary(&mut self) -> BinaryArray {
        let (offsets, values) = self.take_buffers();
        BinaryArray::new(offsets, values, self.nulls.finish())
    }

    /// The offsets and values so far; the column starts empty again, keeping its capacity.
    fn take_buffers(&mut self) -> (OffsetBuffer<i32>, Buffer) {
        let rows = self.offsets.len() - 1;
        let capacity = self.values.len();
        let values = Buffer::from_vec(std::mem::replace(
            &mut self.values,
            Vec::with_capacity(capacity),
        ));
        let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::replace(
            &mut self.offsets,
            Vec::with_capacity(rows + 1),
        )));
        self.offsets.push(0);
        (offsets, values)
    }

    fn finish(&mut self) -> Result<ArrayRef, arrow_schema::ArrowError> {
        let rows = self.offsets.len() - 1;
        let (offsets, values) = self.take_buffers();
        let nulls = self.nulls.finish();
        // Buffers are shared, not copied, by these clones.
        let array = StringArray::try_new(offsets.clone(), values.clone(), nulls.clone());
        match array {
            Ok(a) => Ok(Arc::new(a)),
            Err(_) => {
                // Some string is not UTF-8: escape each as the JSON writer does.
                let mut b = StringBuilder::with_capacity(rows, values.len());
                let mut text = String::new();
                for i in 0..rows {
                    if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
                        b.append_null();
                        continue;
                    }
                    let s = &values.as_slice()[offsets[i] as usize..offsets[i + 1] as usize];
                    text.clear();
                    push_escaped_utf8(&mut text, s);
                    b.append_value(&text);
                }
                Ok(Arc::new(b.finish()))
            }
        }
    }
}

/// A column of fixed-width values. Unlike Arrow's builders it keeps its capacity from batch to
/// batch: a builder that is used again (the lake's) grows its buffers once, not per batch.
struct Fixed<T: ArrowPrimitiveType> {
    values: Vec<T::Native>,
    nulls: Validity,
}

impl<T: ArrowPrimitiveType> Fixed<T> {
    fn new() -> Fixed<T> {
        Fixed {
            values: Vec::new(),
            nulls: Validity::new(),
        }
    }

    #[inline]
    fn append_value(&mut self, v: T::Native) {
        self.values.push(v);
        self.nulls.append_non_null();
    }

    #[inline]
    fn append_null(&mut self) {
        self.values.push(T::Native::default());
        self.nulls.append_null();
    }

    fn finish(&mut self) -> PrimitiveArray<T> {
        let capacity = self.values.len();
        let values = std::mem::replace(&mut self.values, Vec::with_capacity(capacity));
        PrimitiveArray::new(ScalarBuffer::from(values), self.nulls.finish())
    }
}

/// The builder of one scalar column (or of a list column's elements).
enum Scalar {
    Bool(BoolColumn),
    Count(Fixed<UInt64Type>),
    Int(Fixed<Int64Type>),
    Double(Fixed<Float64Type>),
    Time(Fixed<TimestampNanosecondType>),
    /// Seconds ([`interval_seconds`]).
    Interval(Fixed<Float64Type>),
    /// Nanoseconds (`duration[ns]`, [`exact_arrow_schema`]).
    IntervalNs(Fixed<DurationNanosecondType>),
    Port(Fixed<UInt16Type>),
    /// `string`, `enum`, `pattern`, `file`.
    Text(TextColumn),
    /// `string`, `enum`, `pattern`, `file` as `binary` ([`exact_arrow_schema`]).
    Bytes(TextColumn),
    /// `addr`, as text.
    Addr(TextColumn),
    /// `subnet`, as text.
    Subnet(TextColumn),
}

impl Scalar {
    /// The builder of values of type `ty` held as Arrow type `dt` (that of [`arrow_schema()`]
    /// or of [`exact_arrow_schema`]).
    fn new(ty: &Type, dt: &DataType) -> Scalar {
        match (ty, dt) {
            (Type::Interval, DataType::Duration(_)) => return Scalar::IntervalNs(Fixed::new()),
            (_, DataType::Binary) => return Scalar::Bytes(TextColumn::new()),
            _ => {}
        }
        match ty {
            Type::Bool => Scalar::Bool(BoolColumn {
                values: Vec::new(),
                nulls: Validity::new(),
            }),
            Type::Count => Scalar::Count(Fixed::new()),
            Type::Int => Scalar::Int(Fixed::new()),
            Type::Double => Scalar::Double(Fixed::new()),
            Type::Time => Scalar::Time(Fixed::new()),
            Type::Interval => Scalar::Interval(Fixed::new()),
            Type::Port => Scalar::Port(Fixed::new()),
            Type::Addr => Scalar::Addr(TextColumn::new()),
            Type::Subnet => Scalar::Subnet(TextColumn::new()),
            // Strings, and containers (never nested: `MAX_TYPE_DEPTH`).
            _ => Scalar::Text(TextColumn::new()),
        }
    }

    #[inline]
    fn append_null(&mut self) {
        match self {
            Scalar::Bool(b) => b.append_null(),
            Scalar::Count(b) => b.append_null(),
            Scalar::Int(b) => b.append_null(),
            Scalar::Double(b) => b.append_null(),
            Scalar::Time(b) => b.append_null(),
            Scalar::Interval(b) => b.append_null(),
            Scalar::IntervalNs(b) => b.append_null(),
            Scalar::Port(b) => b.append_null(),
            Scalar::Text(b) | Scalar::Bytes(b) | Scalar::Addr(b) | Scalar::Subnet(b) => {
                b.append_null()
            }
        }
    }

    /// Appends the set value of type `ty` whose marker `m` was just read. Each arm reads its
    /// value by its kind (not through the run-time `ty`), so that only that kind's decoding is
    /// left after inlining; errors name `ty`.
    #[inline(always)]
    fn append(&mut self, r: &mut RowCursor<'_>, m: u8, ty: &Type) -> Result<(), DecodeError> {
        match self {
            Scalar::Count(b) => b.append_value(r.uint(m, ty)?),
            Scalar::Int(b) => b.append_value(r.int(m, ty)?),
            Scalar::Time(b) => b.append_value(r.int(m, ty)?),
            Scalar::Interval(b) => b.append_value(interval_seconds(r.int(m, ty)?)),
            Scalar::IntervalNs(b) => b.append_value(r.int(m, ty)?),
            Scalar::Port(b) => {
                let p = r.uint(m, ty)?;
                b.append_value(u16::try_from(p).map_err(|_| r.unexpected(m, ty))?)
            }
            Scalar::Bool(b) => match r.scalar(m, &Type::Bool)? {
                ValueRef::Bool(v) => b.append_value(v),
                _ => return Err(r.unexpected(m, ty)),
            },
            Scalar::Double(b) => match r.scalar(m, &Type::Double)? {
                ValueRef::Double(v) => b.append_value(v),
                _ => return Err(r.unexpected(m, ty)),
            },
            Scalar::Text(b) | Scalar::Bytes(b) => {
                b.values.extend_from_slice(r.bin(m, ty)?);
                b.end_value();
            }
            Scalar::Addr(b) => {
                push_addr(&mut b.values, r.addr(m, ty)?);
                b.end_value();
            }
            Scalar::Subnet(b) => {
                match r.scalar(m, &Type::Subnet)? {
                    ValueRef::Subnet(a, p) => push_subnet(&mut b.values, a, p),
                    _ => return Err(r.unexpected(m, ty)),
                }
                b.end_value();
            }
        }
        Ok(())
    }

    /// Appends the next `n` values of a column (each set, or nil) read from `r`: one
    /// dispatch on the column's kind, then a loop of that kind alone.
    fn append_values(
        &mut self,
        r: &mut RowCursor<'_>,
        n: usize,
        ty: &Type,
    ) -> Result<(), DecodeError> {
        /// For each of the `n` values: nil appends a null, a set value runs `$set` with its
        /// marker in `$m`.
        macro_rules! each {
            ($b:ident, $m:ident => $set:expr) => {
                for _ in 0..n {
                    let $m = r.marker()?;
                    if $m == NIL {
                        $b.append_null();
                    } else {
                        $set;
                    }
                }
            };
        }
        match self {
            Scalar::Count(b) => each!(b, m => b.append_value(r.uint(m, ty)?)),
            Scalar::Int(b) => each!(b, m => b.append_value(r.int(m, ty)?)),
            Scalar::Time(b) => each!(b, m => b.append_value(r.int(m, ty)?)),
            Scalar::Interval(b) => each!(b, m => b.append_value(interval_seconds(r.int(m, ty)?))),
            Scalar::IntervalNs(b) => each!(b, m => b.append_value(r.int(m, ty)?)),
            Scalar::Text(b) | Scalar::Bytes(b) => each!(b, m => {
                b.values.extend_from_slice(r.bin(m, ty)?);
                b.end_value();
            }),
            Scalar::Addr(b) => each!(b, m => {
                push_addr(&mut b.values, r.addr(m, ty)?);
                b.end_value();
            }),
            // The others are rarer: the general per-value path.
            other => {
                for _ in 0..n {
                    let m = r.marker()?;
                    if m == NIL {
                        other.append_null();
                    } else {
                        other.append(r, m, ty)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ArrayRef, arrow_schema::ArrowError> {
        Ok(match self {
            Scalar::Bool(b) => Arc::new(b.finish()),
            Scalar::Count(b) => Arc::new(b.finish()),
            Scalar::Int(b) => Arc::new(b.finish()),
            Scalar::Double(b) => Arc::new(b.finish()),
            Scalar::Time(b) => Arc::new(b.finish().with_timezone("UTC")),
            Scalar::Interval(b) => Arc::new(b.finish()),
            Scalar::IntervalNs(b) => Arc::new(b.finish()),
            Scalar::Port(b) => Arc::new(b.finish()),
            Scalar::Bytes(b) => Arc::new(b.finish_binary()),
            Scalar::Text(b) | Scalar::Addr(b) | Scalar::Subnet(b) => return b.finish(),
        })
    }
}

/// One column: a scalar, or a list of scalars.
enum Column {
    Scalar(Scalar),
    List {
        /// The list's item field (`item`).
        item: FieldRef,
        offsets: Vec<i32>,
        nulls: Validity,
        values: Scalar,
    },
}

impl Column {
    /// The builder of a column of type `ty`, whose Arrow field is `arrow` (of
    /// [`arrow_schema()`] or of [`exact_arrow_schema`]).
    fn new(ty: &Type, arrow: &arrow_schema::Field) -> Column {
        match (ty.element(), arrow.data_type()) {
            (Some(inner), DataType::List(item)) => Column::List {
                item: item.clone(),
                offsets: vec![0],
                nulls: Validity::new(),
                values: Scalar::new(inner, item.data_type()),
            },
            _ => Column::Scalar(Scalar::new(ty, arrow.data_type())),
        }
    }

    /// The values appended so far as an array; the builder starts empty again.
    fn finish(&mut self) -> Result<ArrayRef, ArrowCodecError> {
        match self {
            Column::Scalar(s) => Ok(s.finish()?),
            Column::List {
                item,
                offsets,
                nulls,
                values,
            } => {
                let mut fresh = Vec::with_capacity(offsets.len());
                fresh.push(0);
                let offs = std::mem::replace(offsets, fresh);
                let list = ListArray::try_new(
                    item.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(offs)),
                    values.finish()?,
                    nulls.finish(),
                )?;
                Ok(Arc::new(list) as ArrayRef)
            }
        }
    }

    /// Appends the list (or nil) whose marker `m` was just read; `ty` is the list's type.
    /// Does nothing for a scalar column.
    #[inline]
    fn append_list(&mut self, r: &mut RowCursor<'_>, m: u8, ty: &Type) -> Result<(), DecodeError> {
        let Column::List {
            offsets,
            nulls,
            values,
            ..
        } = self
        else {
            return Ok(());
        };
        let last = offsets.last().copied().unwrap_or(0);
        if m == NIL {
            nulls.append_null();
            offsets.push(last);
            return Ok(());
        }
        let n = r.list_len(m)?;
        let inner = ty.element().unwrap_or(ty);
        for _ in 0..n {
            let m = r.marker()?;
            if m == NIL {
                values.append_null();
            } else {
                values.append(r, m, inner)?;
            }
        }
        nulls.append_non_null();
        // Bounded by the batch's bytes (`MAX_BYTES`): each element takes a byte.
        offsets.push(last.saturating_add(i32::try_from(n).unwrap_or(i32::MAX)));
        Ok(())
    }

    /// Appends the next `n` values of a column of type `ty` read from `r`.
    fn append_values(
        &mut self,
        r: &mut RowCursor<'_>,
        n: usize,
        ty: &Type,
    ) -> Result<(), DecodeError> {
        match self {
            Column::Scalar(s) => s.append_values(r, n, ty),
            Column::List { .. } => {
                for _ in 0..n {
                    let m = r.marker()?;
                    self.append_list(r, m, ty)?;
                }
                Ok(())
            }
        }
    }
}

/// The builder of one column of a field, on its own: the stored-batch decoder
/// (`decode.rs`) builds the columns kept as msgpack values and the entries of dictionaries
/// with it, so that both paths write the same arrays.
pub(super) struct FieldColumn(Column);

impl FieldColumn {
    /// The builder of a column of type `ty`, whose Arrow field is `arrow` (of
    /// [`arrow_schema()`]).
    pub(super) fn new(ty: &Type, arrow: &arrow_schema::Field) -> FieldColumn {
        FieldColumn(Column::new(ty, arrow))
    }

    /// Appends the next `n` values of type `ty` read from `r` (each set, or nil).
    pub(super) fn append_values(
        &mut self,
        r: &mut RowCursor<'_>,
        n: usize,
        ty: &Type,
    ) -> Result<(), DecodeError> {
        self.0.append_values(r, n, ty)
    }

    /// The values appended so far as an array.
    pub(super) fn finish(&mut self) -> Result<ArrayRef, ArrowCodecError> {
        self.0.finish()
    }
}

/// Builds [`RecordBatch`]es of one schema from msgpack rows (see [`crate::value`]).
///
/// A batch holds at most [`ArrowBuilder::MAX_BYTES`] bytes of rows, which keeps every string
/// column far below Arrow's 2 GiB offset limit (a row's text is at most four times its msgpack
/// bytes: `\xHH` for one byte, and an address's text is longer than its bytes by less).
pub struct ArrowBuilder {
    schema: SchemaRef,
    arrow: Arc<ArrowSchema>,
    columns: Vec<Column>,
    rows: usize,
    bytes: usize,
}

impl std::fmt::Debug for ArrowBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrowBuilder")
            .field("schema", &self.schema.name)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl ArrowBuilder {
    /// Row bytes after which a batch should be finished (64 MiB; a row may pass it).
    pub const MAX_BYTES: usize = 64 << 20;

    /// A builder for rows of `schema`.
    pub fn new(schema: SchemaRef) -> ArrowBuilder {
        let arrow = Arc::new(arrow_schema(&schema));
        ArrowBuilder::with_arrow_schema(schema, arrow)
    }

    /// A builder of batches of [`exact_arrow_schema`]: strings as their bytes, intervals as
    /// nanoseconds, for output that must hold every value as it is (the text writers).
    pub fn exact(schema: SchemaRef) -> ArrowBuilder {
        let arrow = Arc::new(exact_arrow_schema(&schema));
        ArrowBuilder::with_arrow_schema(schema, arrow)
    }

    /// A builder for rows of `schema` whose Arrow schema `arrow` (that of [`arrow_schema()`],
    /// or of [`exact_arrow_schema`]) is already made: builders made often share it.
    pub fn with_arrow_schema(schema: SchemaRef, arrow: Arc<ArrowSchema>) -> ArrowBuilder {
        let columns = schema
            .fields
            .iter()
            .zip(arrow.fields())
            .map(|(f, af)| Column::new(&f.ty, af))
            .collect();
        ArrowBuilder {
            schema,
            arrow,
            columns,
            rows: 0,
            bytes: 0,
        }
    }

    /// The weir schema of the rows.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The Arrow schema of the batches.
    pub fn arrow_schema(&self) -> &Arc<ArrowSchema> {
        &self.arrow
    }

    /// Rows appended since the last [`ArrowBuilder::finish`].
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row was appended since the last [`ArrowBuilder::finish`].
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Msgpack bytes of the rows appended since the last [`ArrowBuilder::finish`].
    pub fn byte_size(&self) -> usize {
        self.bytes
    }

    /// Whether the batch should be finished before more rows are added.
    pub fn is_full(&self) -> bool {
        self.bytes >= Self::MAX_BYTES
    }

    /// Appends one row. On error (a row that is not of the schema) the builder is left with
    /// the columns out of step: finish nothing more from it (callers drop it).
    pub fn append(&mut self, row: &[u8]) -> Result<(), DecodeError> {
        let mut r = RowCursor::new(row);
        r.row_header(self.schema.fields.len())?;
        for (field, col) in self.schema.fields.iter().zip(self.columns.iter_mut()) {
            let m = r.marker()?;
            match col {
                Column::Scalar(s) => {
                    if m == NIL {
                        s.append_null();
                    } else {
                        s.append(&mut r, m, &field.ty)?;
                    }
                }
                Column::List { .. } => col.append_list(&mut r, m, &field.ty)?,
            }
        }
        if r.position() != row.len() {
            return Err(DecodeError::Trailing {
                at: r.position(),
                len: row.len(),
            });
        }
        self.rows += 1;
        self.bytes += row.len();
        Ok(())
    }

    /// The rows appended so far as a record batch; the builder starts empty again.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowCodecError> {
        let columns = self
            .columns
            .iter_mut()
            .map(Column::finish)
            .collect::<Result<Vec<_>, ArrowCodecError>>()?;
        let rows = self.rows;
        self.rows = 0;
        self.bytes = 0;
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            self.arrow.clone(),
            columns,
            &options,
        )?)
    }
}

//! Values and their msgpack row encoding.
//!
//! # Row encoding
//!
//! A row (one event) is one msgpack array with one element per schema field, in schema order.
//! The encoding of each element depends on the field's [`Type`]:
//!
//! | type | msgpack |
//! |---|---|
//! | unset (any type) | `nil` |
//! | `bool` | `true` / `false` |
//! | `count`, `port` | positive int, smallest width |
//! | `int` | int, smallest width |
//! | `double` | float 64 |
//! | `time`, `interval` | int, nanoseconds (since the epoch for `time`) |
//! | `string`, `enum`, `pattern`, `file` | bin (raw bytes: Zeek strings need not be UTF-8) |
//! | `addr` | bin of 4 (IPv4) or 16 (IPv6) bytes, network order |
//! | `subnet` | array of 2: `[addr as above, prefix length as positive int]` |
//! | `set[T]`, `vector[T]`, `table[T]` | array of elements encoded as `T`, `nil` for an unset element |
//!
//! Empty containers are empty arrays and empty strings are empty bins, so that unset (`-`) and
//! empty (`(empty)`) stay distinct. The bytes are standard msgpack: `rmp` and `rmp-serde` read
//! them. [`RowEncoder`] writes them without allocation; [`RowCursor`] reads them back without
//! copying byte strings.

use std::net::IpAddr;

use crate::types::Type;

/// A typed value whose byte strings are `S`: owned in [`Value`], borrowed from an encoded row in
/// [`ValueRef`]. String-like types (`string`, `enum`, `pattern`, `file`) share
/// [`ValueOf::String`]; the schema tells them apart.
#[derive(Debug, Clone)]
pub enum ValueOf<S> {
    /// Unset (`-` in Zeek TSV).
    Null,
    /// `bool`.
    Bool(bool),
    /// `count`.
    Count(u64),
    /// `int`.
    Int(i64),
    /// `double`.
    Double(f64),
    /// `time`: nanoseconds since the epoch.
    Time(i64),
    /// `interval`: nanoseconds.
    Interval(i64),
    /// `port`.
    Port(u64),
    /// `string`, `enum`, `pattern`, `file`: raw bytes.
    String(S),
    /// `addr`.
    Addr(IpAddr),
    /// `subnet`: network address and prefix length.
    Subnet(IpAddr, u8),
    /// `set`, `vector`, `table`.
    List(Vec<ValueOf<S>>),
}

/// An owned, typed value.
pub type Value = ValueOf<Vec<u8>>;

/// A value borrowed from an encoded row: byte strings point into the row.
pub type ValueRef<'a> = ValueOf<&'a [u8]>;

impl<S: PartialEq> PartialEq for ValueOf<S> {
    /// Structural equality, where NaN equals NaN (a round trip must keep NaN).
    fn eq(&self, other: &ValueOf<S>) -> bool {
        use ValueOf::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Count(a), Count(b)) | (Port(a), Port(b)) => a == b,
            (Int(a), Int(b)) | (Time(a), Time(b)) | (Interval(a), Interval(b)) => a == b,
            (Double(a), Double(b)) => a == b || (a.is_nan() && b.is_nan()),
            (String(a), String(b)) => a == b,
            (Addr(a), Addr(b)) => a == b,
            (Subnet(a, p), Subnet(b, q)) => a == b && p == q,
            (List(a), List(b)) => a == b,
            _ => false,
        }
    }
}

impl<S> ValueOf<S> {
    /// The same value with every byte string converted by `f`.
    pub fn map_strings<T>(&self, f: &impl Fn(&S) -> T) -> ValueOf<T> {
        use ValueOf::*;
        match self {
            Null => Null,
            Bool(b) => Bool(*b),
            Count(v) => Count(*v),
            Int(v) => Int(*v),
            Double(v) => Double(*v),
            Time(v) => Time(*v),
            Interval(v) => Interval(*v),
            Port(v) => Port(*v),
            String(s) => String(f(s)),
            Addr(a) => Addr(*a),
            Subnet(a, p) => Subnet(*a, *p),
            List(l) => List(l.iter().map(|v| v.map_strings(f)).collect()),
        }
    }
}

impl Value {
    /// This value, borrowed (a list's items are borrowed into a new list).
    pub fn borrowed(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Count(x) => ValueRef::Count(*x),
            Value::Int(x) => ValueRef::Int(*x),
            Value::Double(x) => ValueRef::Double(*x),
            Value::Time(x) => ValueRef::Time(*x),
            Value::Interval(x) => ValueRef::Interval(*x),
            Value::Port(x) => ValueRef::Port(*x),
            Value::String(s) => ValueRef::String(s),
            Value::Addr(a) => ValueRef::Addr(*a),
            Value::Subnet(a, p) => ValueRef::Subnet(*a, *p),
            Value::List(l) => ValueRef::List(l.iter().map(Value::borrowed).collect()),
        }
    }
}

impl ValueRef<'_> {
    /// Copies the value out of the row.
    pub fn to_owned(&self) -> Value {
        self.map_strings(&|s: &&[u8]| s.to_vec())
    }
}

/// Appends msgpack-encoded values to a byte buffer. Infallible and allocation-free beyond the
/// buffer's own growth.
#[derive(Debug)]
pub struct RowEncoder<'a> {
    buf: &'a mut Vec<u8>,
}

/// Bytes [`RowEncoder::bytes_of`] copies at once.
const SHORT_COPY: usize = 32;

impl<'a> RowEncoder<'a> {
    /// An encoder appending to `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> RowEncoder<'a> {
        RowEncoder { buf }
    }

    /// Starts an array of `len` elements: a row header or a container.
    #[inline(always)]
    pub fn array(&mut self, len: u32) {
        if len < 16 {
            self.buf.push(0x90 | len as u8);
        } else if len <= u16::MAX as u32 {
            self.buf.push(0xdc);
            self.buf.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.buf.push(0xdd);
            self.buf.extend_from_slice(&len.to_be_bytes());
        }
    }

    /// Writes `nil` (an unset value).
    #[inline(always)]
    pub fn null(&mut self) {
        self.buf.push(0xc0);
    }

    /// Writes a bool.
    #[inline]
    pub fn bool(&mut self, v: bool) {
        self.buf.push(if v { 0xc3 } else { 0xc2 });
    }

    /// Writes an unsigned integer in its smallest form.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        if v < 128 {
            self.buf.push(v as u8);
        } else if v <= u8::MAX as u64 {
            self.buf.extend_from_slice(&[0xcc, v as u8]);
        } else if v <= u16::MAX as u64 {
            self.buf.push(0xcd);
            self.buf.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v <= u32::MAX as u64 {
            self.buf.push(0xce);
            self.buf.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            self.buf.push(0xcf);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Writes a signed integer in its smallest form (non-negative values as unsigned).
    #[inline(always)]
    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            self.uint(v as u64);
        } else if v >= -32 {
            self.buf.push(v as i8 as u8);
        } else if v >= i8::MIN as i64 {
            self.buf.extend_from_slice(&[0xd0, v as i8 as u8]);
        } else if v >= i16::MIN as i64 {
            self.buf.push(0xd1);
            self.buf.extend_from_slice(&(v as i16).to_be_bytes());
        } else if v >= i32::MIN as i64 {
            self.buf.push(0xd2);
            self.buf.extend_from_slice(&(v as i32).to_be_bytes());
        } else {
            self.buf.push(0xd3);
            self.buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    /// Writes a float 64.
    #[inline]
    pub fn double(&mut self, v: f64) {
        self.buf.push(0xcb);
        self.buf.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    /// Writes a byte string as msgpack `bin`.
    #[inline(always)]
    pub fn bytes(&mut self, v: &[u8]) {
        let len = v.len();
        if len <= u8::MAX as usize {
            self.buf.extend_from_slice(&[0xc4, len as u8]);
        } else if len <= u16::MAX as usize {
            self.buf.push(0xc5);
            self.buf.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            // Rows are bounded by the maximum line length (far below 4 GiB).
            self.buf.push(0xc6);
            self.buf.extend_from_slice(&(len as u32).to_be_bytes());
        }
        self.buf.extend_from_slice(v);
    }

    /// Writes `text[..len]` as [`RowEncoder::bytes`] does. Short values are copied as a
    /// fixed `SHORT_COPY` bytes of `text` when it has them (a few moves instead of a call
    /// to `memcpy`), and the bytes past the value cut off again.
    #[inline(always)]
    pub(crate) fn bytes_of(&mut self, text: &[u8], len: usize) {
        match text.first_chunk::<SHORT_COPY>() {
            Some(chunk) if len <= SHORT_COPY => {
                let at = self.buf.len();
                self.buf.extend_from_slice(&[0xc4, len as u8]);
                self.buf.extend_from_slice(chunk);
                self.buf.truncate(at + 2 + len);
            }
            _ => self.bytes(&text[..len]),
        }
    }

    /// Writes an address as 4 or 16 raw bytes.
    #[inline]
    pub fn addr(&mut self, a: IpAddr) {
        match a {
            IpAddr::V4(a) => self.bytes(&a.octets()),
            IpAddr::V6(a) => self.bytes(&a.octets()),
        }
    }

    /// Writes a subnet as `[addr, prefix]`.
    #[inline]
    pub fn subnet(&mut self, a: IpAddr, prefix: u8) {
        self.array(2);
        self.addr(a);
        self.uint(prefix as u64);
    }

    /// Writes an owned value (used by the JSON reader, tests and conversions).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Count(x) | Value::Port(x) => self.uint(*x),
            Value::Int(x) | Value::Time(x) | Value::Interval(x) => self.int(*x),
            Value::Double(x) => self.double(*x),
            Value::String(s) => self.bytes(s),
            Value::Addr(a) => self.addr(*a),
            Value::Subnet(a, p) => self.subnet(*a, *p),
            Value::List(l) => {
                self.array(l.len() as u32);
                for e in l {
                    self.value(e);
                }
            }
        }
    }
}

/// Why an encoded row could not be read. Rows come from weir's own encoder, so this means
/// corruption (a segment or WAL that passed no checksum) or a schema mismatch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The row ended in the middle of a value.
    #[error("msgpack row truncated at byte {0}")]
    Truncated(usize),
    /// A marker that does not fit the field's type.
    #[error("unexpected msgpack marker 0x{marker:02x} for type {ty} at byte {at}")]
    Unexpected {
        /// The marker byte.
        marker: u8,
        /// The type the schema expects.
        ty: String,
        /// Byte offset in the row.
        at: usize,
    },
    /// Bytes follow the last value of the row.
    #[error("row of {len} bytes ends after its last field at byte {at}")]
    Trailing {
        /// Where the last field ended.
        at: usize,
        /// Length of the row.
        len: usize,
    },
    /// The row's array length differs from the schema's field count.
    #[error("row has {got} fields, schema has {want}")]
    FieldCount {
        /// Fields in the row.
        got: usize,
        /// Fields in the schema.
        want: usize,
    },
}

/// Checks that `row` is exactly one row of `types` (every value decodes as its type and no
/// bytes follow the last), without copying values out: what `weir verify` runs on every row.
pub fn check_row(row: &[u8], types: &[Type]) -> Result<(), DecodeError> {
    let mut c = RowCursor::new(row);
    c.row_header(types.len())?;
    for t in types {
        c.read(t)?;
    }
    if c.position() != row.len() {
        return Err(DecodeError::Trailing {
            at: c.position(),
            len: row.len(),
        });
    }
    Ok(())
}

/// The msgpack `nil` marker: an unset value.
pub const NIL: u8 = 0xc0;

/// The encoded size of a value by its marker byte, for the markers whose size it fixes (nil,
/// bools, ints, floats); 0 for the others (bins, arrays, markers the encoding never writes).
const SKIP_SIZE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        t[m] = match m as u8 {
            0x00..=0x7f | 0xe0..=0xff | NIL | 0xc2 | 0xc3 => 1,
            0xcc | 0xd0 => 2,
            0xcd | 0xd1 => 3,
            0xce | 0xd2 | 0xca => 5,
            0xcf | 0xd3 | 0xcb => 9,
            _ => 0,
        };
        m += 1;
    }
    t
};

/// Reads msgpack values of known types out of an encoded row, borrowing byte strings and
/// allocating nothing but the `Vec` of a container read with [`RowCursor::read`]. The one
/// reader of rows: decoding ([`decode_row`]), checking ([`check_row`]) and the text writers.
///
/// [`RowCursor::read`] reads a whole value. Readers that do not want [`ValueRef::List`]s (the
/// writers, which format elements as they go) read the marker byte themselves with
/// [`RowCursor::marker`], test it for [`NIL`], and continue with [`RowCursor::list_len`] or
/// [`RowCursor::scalar`]; both ways accept the same bytes and report the same errors.
#[derive(Debug, Clone)]
pub struct RowCursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> RowCursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> RowCursor<'a> {
        RowCursor { data, pos: 0 }
    }

    /// A cursor at byte `pos` of `data` (past the end, the first read is an error).
    pub fn at(data: &'a [u8], pos: usize) -> RowCursor<'a> {
        RowCursor { data, pos }
    }

    /// Byte offset of the cursor.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or(DecodeError::Truncated(self.pos))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    #[inline(always)]
    fn be<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Reads the next marker byte (the first byte of a value).
    #[inline(always)]
    pub fn marker(&mut self) -> Result<u8, DecodeError> {
        match self.data.get(self.pos) {
            Some(&m) => {
                self.pos += 1;
                Ok(m)
            }
            None => Err(DecodeError::Truncated(self.pos)),
        }
    }

    /// The error for marker `m` (just read) where a value of type `ty` was expected.
    #[cold]
    pub fn unexpected(&self, marker: u8, ty: &Type) -> DecodeError {
        DecodeError::Unexpected {
            marker,
            ty: ty.to_string(),
            at: self.pos.saturating_sub(1),
        }
    }

    /// Steps over the next value by its msgpack encoding alone, without decoding it or
    /// checking it against a type: the length follows from the marker byte (and, for bins,
    /// the length bytes after it), and arrays are stepped over element by element (nested at
    /// most twice: a container of subnets). What a reader that needs only some fields of a
    /// row does with the others; [`check_row`] is what checks every value.
    #[inline]
    pub fn skip(&mut self) -> Result<(), DecodeError> {
        self.skip_many(1)
    }

    /// [`RowCursor::skip`] `n` times.
    #[inline]
    pub fn skip_many(&mut self, n: usize) -> Result<(), DecodeError> {
        let data = self.data;
        let mut pos = self.pos;
        for _ in 0..n {
            let Some(&m) = data.get(pos) else {
                return Err(DecodeError::Truncated(pos));
            };
            // Scalars of a fixed size and short bins (most strings and addresses) here; an
            // overshoot is caught by the next read or the check after the loop.
            let size = SKIP_SIZE[m as usize];
            if size != 0 {
                pos += size as usize;
            } else if m == 0xc4 {
                let Some(&len) = data.get(pos + 1) else {
                    return Err(DecodeError::Truncated(pos + 1));
                };
                pos += 2 + len as usize;
            } else {
                self.pos = pos;
                self.skip_in(2)?;
                pos = self.pos;
            }
        }
        if pos > data.len() {
            return Err(DecodeError::Truncated(data.len()));
        }
        self.pos = pos;
        Ok(())
    }

    /// The general [`RowCursor::skip`]: any marker, arrays up to `depth` levels deep.
    fn skip_in(&mut self, depth: u8) -> Result<(), DecodeError> {
        let m = self.marker()?;
        let n = match m {
            0x00..=0x7f | 0xe0..=0xff | NIL | 0xc2 | 0xc3 => return Ok(()),
            0xcc | 0xd0 => 1,
            0xcd | 0xd1 => 2,
            0xce | 0xd2 | 0xca => 4,
            0xcf | 0xd3 | 0xcb => 8,
            0xc4 => self.marker()? as usize,
            0xc5 => u16::from_be_bytes(self.be()?) as usize,
            0xc6 => u32::from_be_bytes(self.be()?) as usize,
            0x90..=0x9f | 0xdc | 0xdd if depth > 0 => {
                for _ in 0..self.list_len(m)? {
                    self.skip_in(depth - 1)?;
                }
                return Ok(());
            }
            _ => return Err(self.unexpected_value(m)),
        };
        self.take(n).map(|_| ())
    }

    #[cold]
    fn unexpected_value(&self, marker: u8) -> DecodeError {
        DecodeError::Unexpected {
            marker,
            ty: "value".into(),
            at: self.pos.saturating_sub(1),
        }
    }

    /// Reads an array header and returns its length.
    #[inline]
    pub fn array_len(&mut self) -> Result<usize, DecodeError> {
        let m = self.marker()?;
        self.list_len(m)
    }

    /// The length of the array whose marker `m` was just read (a container or a subnet).
    #[inline(always)]
    pub fn list_len(&mut self, m: u8) -> Result<usize, DecodeError> {
        Ok(match m {
            0x90..=0x9f => (m & 0x0f) as usize,
            0xdc => u16::from_be_bytes(self.be()?) as usize,
            0xdd => u32::from_be_bytes(self.be()?) as usize,
            _ => {
                return Err(DecodeError::Unexpected {
                    marker: m,
                    ty: "array".into(),
                    at: self.pos - 1,
                })
            }
        })
    }

    /// Reads a row header and checks it has `fields` elements.
    #[inline]
    pub fn row_header(&mut self, fields: usize) -> Result<(), DecodeError> {
        let got = self.array_len()?;
        if got != fields {
            return Err(DecodeError::FieldCount { got, want: fields });
        }
        Ok(())
    }

    #[inline(always)]
    fn integer(&mut self, m: u8, ty: &Type) -> Result<i128, DecodeError> {
        Ok(match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => m as i8 as i128,
            0xcc => self.marker()? as i128,
            0xcd => u16::from_be_bytes(self.be()?) as i128,
            0xce => u32::from_be_bytes(self.be()?) as i128,
            0xcf => u64::from_be_bytes(self.be()?) as i128,
            0xd0 => self.marker()? as i8 as i128,
            0xd1 => i16::from_be_bytes(self.be()?) as i128,
            0xd2 => i32::from_be_bytes(self.be()?) as i128,
            0xd3 => i64::from_be_bytes(self.be()?) as i128,
            _ => return Err(self.unexpected(m, ty)),
        })
    }

    /// An integer that must fit `T` (`u64` for `count`/`port`, `i64` for `int`/`time`/
    /// `interval`, `u8` for a prefix length).
    #[inline(always)]
    fn int_as<T: TryFrom<i128> + From<u8>>(&mut self, m: u8, ty: &Type) -> Result<T, DecodeError> {
        if m < 0x80 {
            return Ok(T::from(m));
        }
        let v = self.integer(m, ty)?;
        T::try_from(v).map_err(|_| self.unexpected(m, ty))
    }

    /// Reads the rest of a set `count` or `port` (`ty`) whose marker `m` was just read: what
    /// [`RowCursor::scalar`] does, without the [`ValueRef`].
    #[inline(always)]
    pub fn uint(&mut self, m: u8, ty: &Type) -> Result<u64, DecodeError> {
        self.int_as(m, ty)
    }

    /// Reads the rest of a set `int`, `time` or `interval` (`ty`) whose marker `m` was just
    /// read: what [`RowCursor::scalar`] does, without the [`ValueRef`].
    #[inline(always)]
    pub fn int(&mut self, m: u8, ty: &Type) -> Result<i64, DecodeError> {
        self.int_as(m, ty)
    }

    /// Reads the rest of a set `string`, `enum`, `pattern` or `file` (`ty`) whose marker `m`
    /// was just read: what [`RowCursor::scalar`] does, without the [`ValueRef`].
    #[inline(always)]
    pub fn bin(&mut self, m: u8, ty: &Type) -> Result<&'a [u8], DecodeError> {
        let len = match m {
            0xc4 => self.marker()? as usize,
            0xc5 => u16::from_be_bytes(self.be()?) as usize,
            0xc6 => u32::from_be_bytes(self.be()?) as usize,
            _ => return Err(self.unexpected(m, ty)),
        };
        self.take(len)
    }

    /// Reads the rest of a set `addr` (a bin of 4 or 16 bytes; `ty` for errors) whose marker
    /// `m` was just read: what [`RowCursor::scalar`] does, without the [`ValueRef`].
    #[inline(always)]
    pub fn addr(&mut self, m: u8, ty: &Type) -> Result<IpAddr, DecodeError> {
        let b = self.bin(m, ty)?;
        if let Ok(o) = <[u8; 4]>::try_from(b) {
            Ok(IpAddr::from(o))
        } else if let Ok(o) = <[u8; 16]>::try_from(b) {
            Ok(IpAddr::from(o))
        } else {
            Err(self.unexpected(m, ty))
        }
    }

    /// Reads one value of type `ty`.
    pub fn read(&mut self, ty: &Type) -> Result<ValueRef<'a>, DecodeError> {
        let m = self.marker()?;
        if m == NIL {
            return Ok(ValueRef::Null);
        }
        match ty {
            Type::Set(inner) | Type::Vector(inner) | Type::Table(inner) => {
                let n = self.list_len(m)?;
                // Every element takes at least one byte: bound the allocation by what is left.
                let mut items = Vec::with_capacity(n.min(self.data.len() - self.pos));
                for _ in 0..n {
                    items.push(self.read(inner)?);
                }
                Ok(ValueRef::List(items))
            }
            _ => self.scalar(m, ty),
        }
    }

    /// Reads the rest of a set (not `nil`) value of the scalar type `ty` whose marker `m` was
    /// just read. A container type is an error: the type model has no nested containers.
    #[inline(always)]
    pub fn scalar(&mut self, m: u8, ty: &Type) -> Result<ValueRef<'a>, DecodeError> {
        Ok(match ty {
            Type::Bool => match m {
                0xc2 => ValueRef::Bool(false),
                0xc3 => ValueRef::Bool(true),
                _ => return Err(self.unexpected(m, ty)),
            },
            Type::Count => ValueRef::Count(self.uint(m, ty)?),
            Type::Port => ValueRef::Port(self.uint(m, ty)?),
            Type::Int => ValueRef::Int(self.int(m, ty)?),
            Type::Time => ValueRef::Time(self.int(m, ty)?),
            Type::Interval => ValueRef::Interval(self.int(m, ty)?),
            Type::Double => match m {
                0xcb => ValueRef::Double(f64::from_bits(u64::from_be_bytes(self.be()?))),
                0xca => ValueRef::Double(f32::from_bits(u32::from_be_bytes(self.be()?)) as f64),
                _ => return Err(self.unexpected(m, ty)),
            },
            Type::String | Type::Enum | Type::Pattern | Type::File => {
                ValueRef::String(self.bin(m, ty)?)
            }
            Type::Addr => ValueRef::Addr(self.addr(m, ty)?),
            Type::Subnet => {
                if self.list_len(m)? != 2 {
                    return Err(self.unexpected(m, ty));
                }
                let am = self.marker()?;
                let a = self.addr(am, ty)?;
                let pm = self.marker()?;
                ValueRef::Subnet(a, self.int_as(pm, ty)?)
            }
            Type::Set(_) | Type::Vector(_) | Type::Table(_) => return Err(self.unexpected(m, ty)),
        })
    }
}

/// Encodes a whole row of owned values (a convenience for tests and the JSON reader).
pub fn encode_row(values: &[Value], buf: &mut Vec<u8>) {
    let mut enc = RowEncoder::new(buf);
    enc.array(values.len() as u32);
    for v in values {
        enc.value(v);
    }
}

/// Decodes a whole row into owned values using the field types.
pub fn decode_row(row: &[u8], types: &[Type]) -> Result<Vec<Value>, DecodeError> {
    let mut c = RowCursor::new(row);
    c.row_header(types.len())?;
    types.iter().map(|t| Ok(c.read(t)?.to_owned())).collect()
}

/// The msgpack of `values` back to back, as a column of a batch holds them (each row's
/// array header left out), for the tests of column readers.
#[cfg(test)]
pub(crate) fn column_of(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        // A row of one value is its array header (one byte) and the value.
        let mut row = Vec::new();
        encode_row(std::slice::from_ref(v), &mut row);
        out.extend_from_slice(&row[1..]);
    }
    out
}

/// Numbers below `m`, the same sequence on every run (xorshift), for tests that build rows.
#[cfg(test)]
pub(crate) fn xorshift() -> impl FnMut(u64) -> u64 {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    }
}

/// The integers at the edges of msgpack's integer forms (fixints, 8 to 64 bits, signed and
/// unsigned), for the tests of every reader of them.
#[cfg(test)]
pub(crate) const INT_EDGES: [i64; 20] = [
    0,
    127,
    128,
    255,
    256,
    65535,
    65536,
    u32::MAX as i64,
    u32::MAX as i64 + 1,
    i64::MAX,
    -1,
    -32,
    -33,
    -128,
    -129,
    -32768,
    -32769,
    i32::MIN as i64,
    i32::MIN as i64 - 1,
    i64::MIN,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_of_writes_what_bytes_writes() {
        let text: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for end in [0, 1, 5, 31, 32, 33, 40, 64, 255, 256, 300] {
            for len in [0, 1, 2, 17, 30, 31, 32, 33, 100, 255, 256, 299] {
                if len > end {
                    continue;
                }
                // A value followed by other text, and a value at the very end of its text.
                let text = &text[..end];
                let (mut want, mut got) = (vec![9], vec![9]);
                RowEncoder::new(&mut want).bytes(&text[..len]);
                RowEncoder::new(&mut got).bytes_of(text, len);
                assert_eq!(got, want, "{len} of {end} bytes");
            }
        }
    }

    fn all_types() -> (Vec<Type>, Vec<Value>) {
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let v4: IpAddr = "10.0.0.1".parse().unwrap();
        let types = vec![
            Type::Bool,
            Type::Count,
            Type::Int,
            Type::Double,
            Type::Time,
            Type::Interval,
            Type::String,
            Type::Addr,
            Type::Subnet,
            Type::Port,
            Type::Enum,
            Type::Pattern,
            Type::File,
            Type::Set(Box::new(Type::Addr)),
            Type::Vector(Box::new(Type::Interval)),
            Type::Table(Box::new(Type::String)),
            Type::Count,
            Type::Int,
            Type::String,
        ];
        let values = vec![
            Value::Bool(true),
            Value::Count(u64::MAX),
            Value::Int(i64::MIN),
            Value::Double(f64::NAN),
            Value::Time(1_258_531_221_486_539_000),
            Value::Interval(-5),
            Value::String(vec![0xff, b'a', 0]),
            Value::Addr(v6),
            Value::Subnet(v4, 24),
            Value::Port(65535),
            Value::String(b"udp".to_vec()),
            Value::String(b"^a.*$".to_vec()),
            Value::String(vec![b'x'; 70_000]),
            Value::List(vec![Value::Addr(v4), Value::Null, Value::Addr(v6)]),
            Value::List(vec![]),
            Value::List((0..20).map(|i| Value::String(vec![b'a' + i])).collect()),
            Value::Null,
            Value::Int(-129),
            Value::String(vec![]),
        ];
        (types, values)
    }

    #[test]
    fn check_row_accepts_exact_rows_only() {
        let (types, values) = all_types();
        let mut buf = Vec::new();
        encode_row(&values, &mut buf);
        check_row(&buf, &types).unwrap();
        // Every truncation fails, and so does a byte more.
        for n in 0..buf.len() {
            assert!(check_row(&buf[..n], &types).is_err(), "{n} bytes");
        }
        let mut longer = buf.clone();
        longer.push(0xc0);
        assert!(matches!(
            check_row(&longer, &types),
            Err(DecodeError::Trailing { .. })
        ));
        // A value of the wrong type: a string where a bool is expected.
        let mut swapped = types.clone();
        swapped.swap(0, 6);
        assert!(check_row(&buf, &swapped).is_err());
    }

    #[test]
    fn skip_steps_over_exactly_what_read_reads() {
        let (types, values) = all_types();
        let mut buf = Vec::new();
        encode_row(&values, &mut buf);
        let (mut a, mut b) = (RowCursor::new(&buf), RowCursor::new(&buf));
        a.row_header(types.len()).unwrap();
        b.row_header(types.len()).unwrap();
        for t in &types {
            a.read(t).unwrap();
            b.skip().unwrap();
            assert_eq!(a.position(), b.position(), "{t}");
        }
        // Every truncation is an error, never a panic.
        for n in 0..buf.len() {
            let mut c = RowCursor::new(&buf[..n]);
            let ok = c.array_len().is_ok() && (0..types.len()).all(|_| c.skip().is_ok());
            assert!(!ok, "{n} bytes");
        }
        // Markers the encoding never writes (a str, a map, an array nested three deep).
        for bad in [&[0xa1, b'x'][..], &[0x80], &[0x91, 0x91, 0x91, 0x01]] {
            assert!(RowCursor::new(bad).skip().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_type_round_trips() {
        let (types, values) = all_types();
        let mut buf = Vec::new();
        encode_row(&values, &mut buf);
        assert_eq!(decode_row(&buf, &types).unwrap(), values);
    }

    #[test]
    fn integers_round_trip_at_every_width_boundary() {
        for v in INT_EDGES {
            let mut buf = Vec::new();
            encode_row(&[Value::Int(v)], &mut buf);
            assert_eq!(decode_row(&buf, &[Type::Int]).unwrap(), vec![Value::Int(v)]);
        }
    }

    #[test]
    fn encoding_is_standard_msgpack() {
        let mut buf = Vec::new();
        encode_row(
            &[
                Value::Count(300),
                Value::Int(-7),
                Value::String(b"hi".to_vec()),
            ],
            &mut buf,
        );
        let back: (u64, i64, serde_bytes_like::Bin) = rmp_serde::from_slice(&buf).unwrap();
        assert_eq!(back.0, 300);
        assert_eq!(back.1, -7);
        assert_eq!(back.2 .0, b"hi");
    }

    mod serde_bytes_like {
        /// Deserializes msgpack bin into a Vec<u8>.
        pub struct Bin(pub Vec<u8>);
        impl<'de> serde::Deserialize<'de> for Bin {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bin, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = Bin;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, v: &[u8]) -> Result<Bin, E> {
                        Ok(Bin(v.to_vec()))
                    }
                }
                d.deserialize_bytes(V)
            }
        }
    }

    #[test]
    fn truncated_and_mistyped_rows_are_errors() {
        let (types, values) = all_types();
        let mut buf = Vec::new();
        encode_row(&values, &mut buf);
        for cut in 0..buf.len().min(200) {
            assert!(decode_row(&buf[..cut], &types).is_err(), "cut at {cut}");
        }
        let mut buf = Vec::new();
        encode_row(&[Value::Bool(true)], &mut buf);
        assert!(matches!(
            decode_row(&buf, &[Type::Count]),
            Err(DecodeError::Unexpected { .. })
        ));
        assert!(matches!(
            decode_row(&buf, &[Type::Count, Type::Count]),
            Err(DecodeError::FieldCount { got: 1, want: 2 })
        ));
    }
}

//! The table writer (`--to table`): aligned columns for people, cut to the terminal's width.
//!
//! # Layout
//! ```text
//! zeek.conn  … 13 more columns
//! ts                           uid                 id.orig_h      id.orig_p  id.resp_h
//! 2009-11-18T08:00:21.486539Z  Pii6cUUq1v4         192.168.1.102         68  192.168.1.1
//! 2009-11-18T08:08:00.237253Z  CwjjYJ2WqgTbAqiHl6  192.168.1.103        137  192.168.1.25…
//! ```
//! Rows are written in blocks of at most [`BLOCK_ROWS`] rows of the same column names: a block
//! ends when it is full, when the column names change and at the end of the output (so the
//! events of several schemas that `select #type, ...` gives the same columns are one list, a
//! timeline; [`TableWriter::by_schema`], `weir export --by-schema`, ends a block at each
//! change of schema instead, as before the timeline). Each block is a title line (the names of its rows' schemas, in first-seen order),
//! a header line (the field names) and its rows; blocks are separated by
//! an empty line. The rows of a block are held until the block ends (so that its columns can
//! be measured), never more: memory stays bounded whatever the output's size, but a slow
//! stream of events shows up a block at a time.
//!
//! # Widths
//! Widths are counted in characters (Unicode scalar values): a character that a terminal
//! draws two columns wide (CJK) or not at all (combining marks) shifts the rest of its line.
//! The table is at most `width` characters wide ([`TableWriter::with_width`]; by default the
//! width of [`terminal_width`]): no line is longer.
//! - Each column is as wide as the widest of its header and its cells in the block.
//! - When the columns (two spaces apart) are wider than that, the widest are cut to a common
//!   width, never below [`MIN_COLUMN`] characters (ISO 8601 times and IPv4 addresses stay
//!   whole).
//! - When they are still too wide, the columns that do not fit are dropped from the right,
//!   and the title says how many (`… 13 more columns`); `select` chooses the columns to see.
//!   The first column is always shown, cut to the width if need be.
//!
//! A cell (or header, or title) longer than its column is cut, its last character shown
//! being `…`. Numbers (`count`, `int`, `double`, `interval`, `port`) are aligned to the right,
//! everything else to the left; lines carry no trailing spaces.
//!
//! # Values
//! As [`crate::codec::cells`] writes them, with control characters escaped (`\x0a`): times in
//! ISO 8601 UTC (`2009-11-18T08:00:21.486539Z`), intervals in seconds (`0.163820`),
//! `true`/`false`, containers joined by `,`, invalid UTF-8 as `\xHH` (as the JSON writer).
//! An unset value is `-`, a set one with no text (an empty string or container) `(empty)`, as
//! in Zeek TSV; unlike there, a string `-` or `(empty)` is shown as it is.

use arrow_array::RecordBatch;

use crate::codec::arrow::ArrowForm;
use crate::codec::cells::{push_cells, push_text, Cell, CellKind, Controls};
use crate::codec::event_writer::{EventWriter, WriteError};
use crate::codec::row_batches::{write_rows, RowBatches};
use crate::codec::text_format::{same_columns, text_columns};
use crate::types::{SchemaRef, Type};

/// Most rows in one block: the rows whose widths make the columns, held until printed.
pub const BLOCK_ROWS: usize = 1000;

/// The table's width when neither `COLUMNS` nor the terminal tells it.
pub const DEFAULT_WIDTH: usize = 120;

/// Narrowest width the widest columns are cut to before columns are dropped instead: an ISO
/// 8601 time (27 characters) and an IPv4 address stay whole.
pub const MIN_COLUMN: usize = 30;

/// Spaces between two columns.
const GAP: usize = 2;

/// The shown text of an unset value.
const UNSET: &str = "-";
/// The shown text of a set value without text.
const EMPTY: &str = "(empty)";

/// The width of the table when none is given: the `COLUMNS` environment variable when it is
/// a positive number, else the width of the terminal that standard output is, else
/// [`DEFAULT_WIDTH`].
pub fn terminal_width() -> usize {
    width_of(
        std::env::var("COLUMNS").ok().as_deref(),
        &console::Term::stdout(),
    )
    .unwrap_or(DEFAULT_WIDTH)
}

/// The width a line may take: `columns` (the `COLUMNS` environment variable) when it is a
/// positive number, else the width of the terminal `term` is, if it is one. The one reading of
/// `COLUMNS`, for the table and the progress line alike.
pub fn width_of(columns: Option<&str>, term: &console::Term) -> Option<usize> {
    columns
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| {
            term.size_checked()
                .map(|(_, cols)| usize::from(cols))
                .filter(|&c| c > 0)
        })
}

/// A buffered cell: where its (possibly cut) text ends, its length in characters and kind.
#[derive(Debug, Clone, Copy)]
struct Held {
    end: usize,
    chars: usize,
    kind: CellKind,
}

/// Writes events as aligned tables. See the module docs for the layout.
pub struct TableWriter {
    width: usize,
    /// Schema of the block being held, if any.
    current: Option<SchemaRef>,
    /// A block per schema, also where schemas have the same column names
    /// ([`TableWriter::by_schema`]).
    by_schema: bool,
    /// The schema names of the held block's rows, in first-seen order (several in a
    /// timeline: the title names them all).
    block_names: Vec<String>,
    /// Whether a block was printed since the start (or [`EventWriter::finish`]).
    started: bool,
    /// The held cells of the block (text cut to `width + 1` characters), row after row.
    text: String,
    held: Vec<Held>,
    rows: usize,
    /// The cells of the row being read.
    row_text: Vec<u8>,
    row_cells: Vec<Cell>,
    /// Per block: the text of the header cells and the widths of the shown columns.
    header: String,
    header_ends: Vec<(usize, usize)>,
    widths: Vec<usize>,
    rows_in: RowBatches,
}

impl std::fmt::Debug for TableWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter")
            .field("width", &self.width)
            .field("current", &self.current.as_ref().map(|s| s.name.clone()))
            .field("rows", &self.rows)
            .finish()
    }
}

impl Default for TableWriter {
    fn default() -> Self {
        TableWriter::new()
    }
}

impl TableWriter {
    /// A table as wide as [`terminal_width`].
    pub fn new() -> TableWriter {
        TableWriter::with_width(terminal_width())
    }

    /// A table at most `width` characters wide (at least 1).
    pub fn with_width(width: usize) -> TableWriter {
        TableWriter {
            width: width.max(1),
            current: None,
            by_schema: false,
            block_names: Vec::new(),
            started: false,
            text: String::new(),
            held: Vec::new(),
            rows: 0,
            row_text: Vec::new(),
            row_cells: Vec::new(),
            header: String::new(),
            header_ends: Vec::new(),
            widths: Vec::new(),
            rows_in: RowBatches::new(ArrowForm::Exact),
        }
    }

    /// A block per schema even where schemas have the same column names, as before the
    /// timeline (`weir export --to table --by-schema`).
    pub fn by_schema(mut self, on: bool) -> TableWriter {
        self.by_schema = on;
        self
    }

    /// Holds the cells of the row just read (in `row_text`, `row_cells`), each cut to one
    /// character more than the table's width (as `…`): no column is wider than the table.
    fn hold_row(&mut self) {
        let mut start = 0;
        for cell in &self.row_cells {
            let bytes = &self.row_text[start..cell.end];
            start = cell.end;
            // `push_cells` writes valid UTF-8 (invalid bytes are escaped).
            let s = std::str::from_utf8(bytes).unwrap_or_default();
            let (shown, chars) = match cell.kind {
                CellKind::Unset => ("", UNSET.chars().count()),
                CellKind::Empty => ("", EMPTY.chars().count()),
                CellKind::Text => fit_text(s, self.width),
            };
            self.text.push_str(shown);
            if shown.len() < s.len() {
                self.text.push('…');
            }
            self.held.push(Held {
                end: self.text.len(),
                chars,
                kind: cell.kind,
            });
        }
        self.rows += 1;
    }

    /// Prints the held block, if any, and empties it.
    fn print_block(&mut self, out: &mut Vec<u8>) {
        let Some(schema) = self.current.clone() else {
            return;
        };
        if self.rows == 0 {
            return;
        }
        let n = schema.fields.len();
        // The header's cells and the columns' natural widths.
        self.header.clear();
        self.header_ends.clear();
        let mut natural = Vec::with_capacity(n);
        let mut tmp = Vec::new();
        for f in &schema.fields {
            tmp.clear();
            push_text(&mut tmp, f.name.as_bytes(), false, Controls::Escape);
            let s = std::str::from_utf8(&tmp).unwrap_or_default();
            let chars = s.chars().count();
            self.header.push_str(s);
            self.header_ends.push((self.header.len(), chars));
            natural.push(chars);
        }
        for (i, h) in self.held.iter().enumerate() {
            let j = i % n;
            natural[j] = natural[j].max(h.chars);
        }
        fit_widths(&natural, self.width, &mut self.widths);
        let shown = self.widths.len();
        let right: Vec<bool> = schema
            .fields
            .iter()
            .map(|f| {
                matches!(
                    f.ty,
                    Type::Count | Type::Int | Type::Double | Type::Interval | Type::Port
                )
            })
            .collect();

        // Title.
        if self.started {
            out.push(b'\n');
        }
        self.started = true;
        let mut title = Vec::new();
        let names = if self.block_names.is_empty() {
            schema.name.clone()
        } else {
            self.block_names.join(", ")
        };
        push_text(&mut title, names.as_bytes(), false, Controls::Escape);
        let mut title = String::from_utf8(title).unwrap_or_default();
        if shown < n {
            let more = n - shown;
            title.push_str(&format!(
                "  … {more} more column{}",
                if more == 1 { "" } else { "s" }
            ));
        }
        let chars = title.chars().count();
        push_cut(out, &title, chars, self.width);
        out.push(b'\n');

        // Header.
        let mut line = LineWriter::new(out);
        let mut start = 0;
        for (j, &(end, chars)) in self.header_ends.iter().enumerate().take(shown) {
            line.cell(
                &self.header[start..end],
                chars,
                self.widths[j],
                right[j],
                j + 1 == shown,
            );
            start = end;
        }
        line.end();

        // Rows (of a schema without fields: empty lines).
        if n == 0 {
            out.resize(out.len() + self.rows, b'\n');
        }
        let mut start = 0;
        for row in self.held.chunks(n.max(1)) {
            let mut line = LineWriter::new(out);
            for (j, h) in row.iter().enumerate() {
                if j < shown {
                    let s = match h.kind {
                        CellKind::Unset => UNSET,
                        CellKind::Empty => EMPTY,
                        CellKind::Text => &self.text[start..h.end],
                    };
                    line.cell(s, h.chars, self.widths[j], right[j], j + 1 == shown);
                }
                start = h.end;
            }
            line.end();
        }
        self.text.clear();
        self.held.clear();
        self.block_names.clear();
        self.rows = 0;
    }
}

/// Writes the cells of one line: cells two spaces apart, padded to their column's width.
struct LineWriter<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> LineWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> LineWriter<'a> {
        LineWriter { out, first: true }
    }

    /// Appends a cell of `chars` characters in a column `width` wide; `last` writes no
    /// trailing spaces.
    fn cell(&mut self, s: &str, chars: usize, width: usize, right: bool, last: bool) {
        if !self.first {
            push_spaces(self.out, GAP);
        }
        self.first = false;
        let pad = width.saturating_sub(chars);
        if right {
            push_spaces(self.out, pad);
        }
        push_cut(self.out, s, chars, width);
        if !right && !last {
            push_spaces(self.out, pad);
        }
    }

    fn end(self) {
        self.out.push(b'\n');
    }
}

fn push_spaces(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, b' ');
}

/// Appends `s` (of `chars` characters) cut to `width` characters: when longer, its first
/// `width - 1` characters and `…`.
fn push_cut(out: &mut Vec<u8>, s: &str, chars: usize, width: usize) {
    if chars <= width {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    let keep = width.saturating_sub(1);
    out.extend_from_slice(&s.as_bytes()[..char_start(s, keep)]);
    if width > 0 {
        out.extend_from_slice("…".as_bytes());
    }
}

/// The byte offset of character `n` of `s` (its length when `s` is shorter).
fn char_start(s: &str, n: usize) -> usize {
    if s.is_ascii() {
        return n.min(s.len());
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// `s` cut to at most `width` characters (the part to keep: the caller adds `…` when it is
/// shorter than `s`), and the number of characters to count for it: its own, or `width + 1`
/// when it was cut.
fn fit_text(s: &str, width: usize) -> (&str, usize) {
    let chars = if s.is_ascii() {
        s.len()
    } else {
        bytecount::num_chars(s.as_bytes())
    };
    if chars <= width {
        (s, chars)
    } else {
        (&s[..char_start(s, width)], width + 1)
    }
}

/// The total width of columns of `widths`, [`GAP`] apart.
fn total(widths: impl Iterator<Item = usize>) -> usize {
    let mut n = 0usize;
    let mut sum = 0usize;
    for w in widths {
        sum += w;
        n += 1;
    }
    sum + GAP * n.saturating_sub(1)
}

/// The largest cap `c` in `min..=max` such that the columns of `natural`, each cut to `c`,
/// fit in `width`; `None` when not even `min` does.
fn largest_cap(natural: &[usize], width: usize, min: usize) -> Option<usize> {
    let fits = |c: usize| total(natural.iter().map(|&w| w.min(c))) <= width;
    let max = natural.iter().copied().max().unwrap_or(0).max(min);
    if !fits(min) {
        return None;
    }
    let (mut lo, mut hi) = (min, max);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// The widths of the shown columns (a prefix of them) for columns of `natural` widths in a
/// table `width` wide (see the module docs): all at their natural width when they fit; else
/// the widest cut to a common width of at least [`MIN_COLUMN`]; else the columns that fit
/// with that cut, from the left (at least one, cut to `width` if need be).
fn fit_widths(natural: &[usize], width: usize, widths: &mut Vec<usize>) {
    widths.clear();
    if let Some(cap) = largest_cap(natural, width, MIN_COLUMN) {
        widths.extend(natural.iter().map(|&w| w.min(cap)));
        return;
    }
    // Keep the columns that fit, cut to MIN_COLUMN, from the left.
    let mut used = 0;
    let mut keep = 0;
    for &w in natural {
        let need = w.min(MIN_COLUMN) + if keep > 0 { GAP } else { 0 };
        if used + need > width {
            break;
        }
        used += need;
        keep += 1;
    }
    if keep == 0 {
        if let Some(&first) = natural.first() {
            widths.push(first.min(width));
        }
        return;
    }
    let kept = &natural[..keep];
    let cap = largest_cap(kept, width, MIN_COLUMN).unwrap_or(MIN_COLUMN);
    widths.extend(kept.iter().map(|&w| w.min(cap)));
}

impl EventWriter for TableWriter {
    fn write_record_batch(
        &mut self,
        schema: &SchemaRef,
        batch: &RecordBatch,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let columns = text_columns(schema, batch)?;
        for row in 0..batch.num_rows() {
            if !same_columns(self.current.as_ref(), schema, self.by_schema) {
                self.print_block(out);
                self.current = Some(schema.clone());
            }
            if !self.block_names.iter().any(|n| *n == schema.name) {
                self.block_names.push(schema.name.clone());
            }
            self.row_text.clear();
            self.row_cells.clear();
            push_cells(
                &columns,
                row,
                Controls::Escape,
                &mut self.row_text,
                &mut self.row_cells,
            );
            self.hold_row();
            if self.rows >= BLOCK_ROWS {
                self.print_block(out);
            }
        }
        Ok(())
    }

    fn write_rows(
        &mut self,
        schema: &SchemaRef,
        rows: &mut dyn Iterator<Item = &[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        write_rows(self, |w| &mut w.rows_in, schema, rows, out)
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        self.print_block(out);
        self.current = None;
        self.started = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(natural: &[usize], width: usize) -> Vec<usize> {
        let mut w = Vec::new();
        fit_widths(natural, width, &mut w);
        w
    }

    #[test]
    fn columns_that_fit_keep_their_width() {
        assert_eq!(fit(&[27, 18, 5], 60), [27, 18, 5]);
        // Exactly the width: 27 + 2 + 18 + 2 + 11 = 60.
        assert_eq!(fit(&[27, 18, 11], 60), [27, 18, 11]);
        assert_eq!(fit(&[], 60), Vec::<usize>::new());
    }

    #[test]
    fn the_widest_columns_are_cut_to_a_common_width() {
        // 27 + 2 + c + 2 + c <= 100 with two long columns: c = 34.
        assert_eq!(fit(&[27, 60, 80], 100), [27, 34, 34]);
        // The narrow ones keep their width; the cap is the largest that fits.
        let w = fit(&[5, 200, 7, 90], 120);
        assert_eq!(w.len(), 4);
        assert!(total(w.iter().copied()) <= 120);
        assert_eq!((w[0], w[2]), (5, 7));
        assert_eq!(w[1], w[3]);
        assert!(total([5, w[1] + 1, 7, w[1] + 1].into_iter()) > 120);
    }

    #[test]
    fn columns_that_do_not_fit_are_dropped_from_the_right() {
        // Zeek conn's first columns at 60: ts and uid.
        assert_eq!(fit(&[27, 18, 15, 9, 15, 9], 60), [27, 18]);
        // At 120, as many as fit at their natural width.
        let conn = [27, 18, 15, 9, 15, 9, 5, 7, 8, 10, 10, 10, 10, 10, 12];
        assert_eq!(fit(&conn, 120), [27, 18, 15, 9, 15, 9, 5, 7]);
        // Long columns count as MIN_COLUMN when choosing, then share the room left.
        let w = fit(&[100, 100, 100, 100], 100);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(total(w.iter().copied()) <= 100);
        assert!(w.iter().all(|&c| c >= MIN_COLUMN));
    }

    #[test]
    fn one_column_is_always_shown() {
        assert_eq!(fit(&[27, 18], 10), [10]);
        assert_eq!(fit(&[3, 18], 1), [1]);
    }

    #[test]
    fn every_fit_is_within_the_width() {
        // A deterministic sweep of many shapes: the table never exceeds the width, shows at
        // least one column, and cuts no column that would have fitted.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as usize
        };
        for _ in 0..2000 {
            let n = 1 + next(30);
            let natural: Vec<usize> = (0..n).map(|_| 1 + next(150)).collect();
            let width = 1 + next(250);
            let w = fit(&natural, width);
            assert!(!w.is_empty());
            assert!(
                total(w.iter().copied()) <= width,
                "{natural:?} {width} {w:?}"
            );
            assert!(w[0] <= width);
            for (j, &c) in w.iter().enumerate() {
                assert!(c <= natural[j]);
                if c < natural[j] {
                    assert!(c >= MIN_COLUMN.min(width), "{natural:?} {width} {w:?}");
                }
            }
            if total(natural.iter().copied()) <= width {
                assert_eq!(w, natural);
            }
        }
    }

    fn schema(fields: &[(&str, &str)]) -> SchemaRef {
        use crate::types::{Field, Schema};
        Schema::new(
            "t.s",
            fields
                .iter()
                .map(|(n, t)| Field::new(*n, Type::parse(t).unwrap()))
                .collect(),
        )
        .into_shared()
    }

    /// The rows written (what is printed of them so far).
    fn write(w: &mut TableWriter, schema: &SchemaRef, rows: &[Vec<crate::value::Value>]) -> String {
        let encoded: Vec<Vec<u8>> = rows
            .iter()
            .map(|r| {
                let mut b = Vec::new();
                crate::value::encode_row(r, &mut b);
                b
            })
            .collect();
        let mut out = Vec::new();
        let mut it = encoded.iter().map(|r| &r[..]);
        w.write_rows(schema, &mut it, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn blocks_of_a_table() {
        use crate::value::Value;
        let a = schema(&[("name", "string"), ("n", "count")]);
        let none = schema(&[]);
        let mut w = TableWriter::with_width(40);
        let rows = [
            vec![Value::String(b"x".to_vec()), Value::Count(5)],
            vec![Value::String(vec![]), Value::Null],
        ];
        // Held until the schema changes.
        let mut all = write(&mut w, &a, &rows);
        assert_eq!(all, "");
        all += &write(&mut w, &none, &[vec![], vec![]]);
        let long = Value::String("é".repeat(50).into_bytes());
        all += &write(&mut w, &a, &[vec![long, Value::Count(12345)]]);
        let mut out = Vec::new();
        w.finish(&mut out);
        all += &String::from_utf8(out).unwrap();
        // The long cell is cut to 33 characters: 33 + 2 + 5 = 40.
        let e = "é".repeat(32);
        let pad = " ".repeat(35);
        let want = format!(
            "t.s\nname     n\nx        5\n(empty)  -\n\nt.s\n\n\n\n\nt.s\nname{pad}n\n{e}…  12345\n"
        );
        assert_eq!(all, want);

        // Full blocks are printed as they fill.
        let mut w = TableWriter::with_width(40);
        let rows: Vec<Vec<Value>> = (0..BLOCK_ROWS as u64 + 1)
            .map(|i| vec![Value::String(b"r".to_vec()), Value::Count(i)])
            .collect();
        let printed = write(&mut w, &a, &rows);
        assert_eq!(printed.lines().count(), 2 + BLOCK_ROWS);
        assert!(printed.lines().all(|l| l.chars().count() <= 40));
    }

    #[test]
    fn text_is_cut_by_characters() {
        let mut o = Vec::new();
        push_cut(&mut o, "héllo wörld", 11, 6);
        assert_eq!(String::from_utf8(o).unwrap(), "héllo…");
        let mut o = Vec::new();
        push_cut(&mut o, "abc", 3, 3);
        assert_eq!(o, b"abc");
        assert_eq!(fit_text("ééé", 2), ("éé", 3));
        assert_eq!(fit_text("ééé", 3), ("ééé", 3));
        assert_eq!(fit_text("abcd", 2), ("ab", 3));
    }
}

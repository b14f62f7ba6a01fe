//! Re-batching of a batch stream by size, bytes and time, shaped like Vector's `Batcher` and
//! `BatchConfig`.
//!
//! [`Batcher`] wraps a `Stream<Item = Result<Batch, E>>` and emits batches that
//!
//! - hold events of one schema only;
//! - come in *groups* ([`Batch::group_next`]): the batcher collects a *window* of input, at
//!   most [`BatchConfig::max_events`] events and [`BatchConfig::max_bytes`] encoded bytes in
//!   all, and emits it as one batch per schema (in the order each schema first appeared, the
//!   events of each in input order), all but the last with `group_next` set. Input batches of
//!   a schema already in the window are appended to its batch with [`Batch::append`]; an input
//!   batch that would not fit in the window emits the window at once (as Vector's batcher
//!   does: inputs are not copied to top a window up, so a stream of full input batches passes
//!   through without a copy, each a group of one). Interleaved schemas (Suricata EVE's event
//!   types, Zeek JSON's `_path`s) so make batches of many events instead of one batch per
//!   run of lines of one type (issue 57);
//! - hold, per window, at most `max_events` events and `max_bytes` bytes (a single event
//!   larger than `max_bytes` goes alone in its batch): bigger inputs are cut, never dropped;
//! - are flushed when [`BatchConfig::timeout`] has passed since the first event of the window
//!   arrived (so a live, slow source still makes progress), and at end of input.
//!
//! Checkpoints of followed files ([`crate::checkpoint::Mark`]) say where a file is after a
//! row in *line order*. A window's batches are not in line order (its rows of one schema are
//! not a prefix of its lines), so a window of several batches carries all its checkpoints on
//! its last batch, after its last row: they hold for the whole group, which the archive
//! commits together or not at all ([`crate::store::Store::append_group`]). A window of one
//! batch is in line order and keeps each checkpoint after its own row.
//!
//! With [`BatchConfig::regroup`] off, a change of schema ends the window instead: every
//! window is of one schema, and the output is in input order (as before regrouping).
//!
//! Order is kept per schema, and across windows: the output holds exactly the input events,
//! each window's after the previous window's. An input error is passed on after the window
//! being built has been emitted.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::batch::Batch;
use crate::checkpoint::Mark;
use crate::setting::InvalidSetting;
use crate::value::{RowCursor, ValueRef};

/// Limits of the batches a [`Batcher`] emits: the `[transforms.NAME] type = "batch"` table of
/// a pipeline file (keys `max_events`, `max_bytes`, `timeout`, `regroup`) and `weir import`'s
/// `--batch-size`, `--batch-timeout` and `--batch-in-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchConfig {
    /// Most events in one batch (1 to [`BatchConfig::MAX_EVENTS_LIMIT`]).
    pub max_events: usize,
    /// Most encoded bytes in one batch (at least 1; one bigger event still makes a batch).
    #[serde(deserialize_with = "crate::setting::de_size_usize")]
    pub max_bytes: usize,
    /// Longest time a partial batch waits for more events after its first one.
    #[serde(deserialize_with = "crate::setting::de_duration")]
    pub timeout: Duration,
    /// Regroup a window of interleaved schemas into one batch per schema (the default; see
    /// the module docs). `false` (`--batch-in-order`): a change of schema ends the window, so
    /// the archive's ID order is the input's line order across schemas too, at the cost of a
    /// batch per run of one schema (slow for input such as Suricata EVE).
    pub regroup: bool,
}

impl BatchConfig {
    /// Default events per batch (`--batch-size`; see [`crate::batch::DEFAULT_BATCH_EVENTS`]).
    pub const DEFAULT_MAX_EVENTS: usize = crate::batch::DEFAULT_BATCH_EVENTS;
    /// Default bytes per batch.
    pub const DEFAULT_MAX_BYTES: usize = 16 << 20;
    /// Default timeout (`--batch-timeout`).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1);
    /// Most events a batch may be configured to hold (2^24): a batch's row offsets are
    /// 32-bit, and a bigger batch would only delay the first write.
    pub const MAX_EVENTS_LIMIT: usize = 1 << 24;

    /// Checks the limits: the one check of each, for flags and pipeline files alike.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if !(1..=Self::MAX_EVENTS_LIMIT).contains(&self.max_events) {
            let reason = if self.max_events == 0 {
                "must be at least 1".to_string()
            } else {
                format!("must be at most {}", Self::MAX_EVENTS_LIMIT)
            };
            return Err(InvalidSetting::out_of_range(
                "max_events",
                self.max_events.to_string(),
                reason,
            ));
        }
        InvalidSetting::at_least_one("max_bytes", self.max_bytes as u64)
    }
}

impl Default for BatchConfig {
    fn default() -> BatchConfig {
        BatchConfig {
            max_events: Self::DEFAULT_MAX_EVENTS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            timeout: Self::DEFAULT_TIMEOUT,
            regroup: true,
        }
    }
}

/// A stream adapter that re-batches by schema, size, bytes and time; see the module docs.
pub struct Batcher<S, E> {
    inner: S,
    config: BatchConfig,
    /// The window being built: one batch per schema, in order of first appearance.
    window: Vec<Batch>,
    /// The events and bytes in `window`.
    rows: usize,
    bytes: usize,
    /// The checkpoints of the window's input, rows numbered in the window's input order.
    marks: Vec<Mark>,
    /// The flush deadline of the window (created on first use, within the runtime).
    timer: Option<Pin<Box<Sleep>>>,
    /// Complete batches waiting to be emitted, in order.
    ready: VecDeque<Batch>,
    /// An input error to pass on once `ready` is empty.
    error: Option<E>,
    done: bool,
}

impl<S, E> Batcher<S, E>
where
    S: Stream<Item = Result<Batch, E>> + Unpin,
{
    /// Wraps `inner`. Must be polled within a tokio runtime with time enabled (the timeout
    /// uses tokio time). A limit of 0, which [`BatchConfig::validate`] refuses, acts as 1 here
    /// so that cutting batches always makes progress.
    pub fn new(inner: S, config: BatchConfig) -> Batcher<S, E> {
        let config = BatchConfig {
            max_events: config.max_events.max(1),
            max_bytes: config.max_bytes.max(1),
            ..config
        };
        Batcher {
            inner,
            config,
            window: Vec::new(),
            rows: 0,
            bytes: 0,
            marks: Vec::new(),
            timer: None,
            ready: VecDeque::new(),
            error: None,
            done: false,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &BatchConfig {
        &self.config
    }

    /// Emits the window: one batch, or a group of one batch per schema carrying the window's
    /// checkpoints on its last (see the module docs).
    fn flush_window(&mut self) {
        let marks = std::mem::take(&mut self.marks);
        let mut window = std::mem::take(&mut self.window);
        self.rows = 0;
        self.bytes = 0;
        if window.len() > 1 {
            let last = window.len() - 1;
            for b in &mut window[..last] {
                b.set_group_next(true);
            }
            let b = &mut window[last];
            let n = b.len();
            b.set_marks(
                marks
                    .into_iter()
                    .map(|m| Mark::after_rows(n, m.end))
                    .collect(),
            );
        } else if let Some(b) = window.first_mut() {
            // One schema: the window's rows are its rows, in line order.
            b.set_marks(marks);
        }
        self.ready.extend(window);
    }

    fn full(&self) -> bool {
        self.rows >= self.config.max_events || self.bytes >= self.config.max_bytes
    }

    fn add(&mut self, mut batch: Batch) {
        if batch.is_empty() {
            // Checkpoints without rows (see `crate::checkpoint`) go after the rows before them.
            if !batch.marks().is_empty() {
                if self.window.is_empty() {
                    self.ready.push_back(batch);
                } else {
                    let n = self.rows;
                    self.marks.extend(batch.marks().iter().map(|m| Mark {
                        row_start: n,
                        row_end: n,
                        ..m.clone()
                    }));
                }
            }
            return;
        }
        if !self.window.is_empty() {
            let fits = self.rows + batch.len() <= self.config.max_events
                && self.bytes + batch.byte_size() <= self.config.max_bytes
                && (self.config.regroup
                    || self.window.iter().all(|b| b.schema() == batch.schema()));
            if fits {
                self.add_to_window(batch);
                if self.full() {
                    self.flush_window();
                }
                return;
            }
            // The input does not fit: the window goes as it is (rather than copying the input
            // to top it up), and the input starts a new one.
            self.flush_window();
        }
        if batch.len() > self.config.max_events || batch.byte_size() > self.config.max_bytes {
            // Too big on its own: cut it, emit the full pieces, keep the last one.
            batch.set_group_next(false);
            let mut pieces = split(&batch, &self.config);
            match pieces.pop() {
                Some(last) => batch = last,
                None => return,
            }
            self.ready.extend(pieces);
        }
        self.add_to_window(batch);
        if self.full() {
            self.flush_window();
        }
    }

    /// Adds a batch that fits to the window (starting its timer if it is the first).
    fn add_to_window(&mut self, mut batch: Batch) {
        let n = self.rows;
        self.marks.extend(batch.marks().iter().map(|m| Mark {
            row_start: m.row_start + n,
            row_end: m.row_end + n,
            ..m.clone()
        }));
        batch.set_marks(Vec::new());
        batch.set_group_next(false);
        self.rows += batch.len();
        self.bytes += batch.byte_size();
        if self.window.is_empty() {
            let deadline = Instant::now() + self.config.timeout;
            match &mut self.timer {
                Some(t) => t.as_mut().reset(deadline),
                None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        let schema = batch.schema();
        let slot = self.window.iter_mut().find(|b| {
            std::sync::Arc::ptr_eq(b.schema(), schema)
                || (b.schema().name == schema.name && b.schema() == schema)
        });
        match slot {
            Some(b) => {
                b.append(&batch);
            }
            None => self.window.push(batch),
        }
    }
}

/// Cuts `batch` into pieces within the limits (a single event bigger than `max_bytes` makes a
/// piece of its own). Linear in the batch size: each row is copied once and the ts range of
/// each piece is computed from its own rows.
fn split(batch: &Batch, config: &BatchConfig) -> Vec<Batch> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < batch.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < batch.len() && end - start < config.max_events {
            let r = batch.row_range(end).len();
            if bytes + r > config.max_bytes && end > start {
                break;
            }
            bytes += r;
            end += 1;
        }
        pieces.push(slice(batch, start, end));
        start = end;
    }
    pieces
}

/// Rows `[start, end)` of `batch` as a new batch (may be empty).
fn slice(batch: &Batch, start: usize, end: usize) -> Batch {
    let base = batch.offsets().get(start).copied().unwrap_or(0);
    let stop = batch
        .offsets()
        .get(end)
        .copied()
        .unwrap_or(batch.data().len());
    let data = batch.data()[base..stop].to_vec();
    let offsets: Vec<usize> = batch.offsets()[start..end]
        .iter()
        .map(|o| o - base)
        .collect();
    let ts = ts_range(batch, start, end);
    let mut out = Batch::from_parts(batch.schema().clone(), data, offsets, ts)
        .unwrap_or_else(|| crate::batch::BatchBuilder::new(batch.schema().clone()).finish());
    out.set_id(batch.id() + start as u64);
    out.set_marks(Mark::slice(batch.marks(), start, end));
    out
}

/// Minimum and maximum `ts` over rows `[start, end)`.
fn ts_range(batch: &Batch, start: usize, end: usize) -> Option<(i64, i64)> {
    let schema = batch.schema();
    let idx = schema.ts_index()?;
    let mut out: Option<(i64, i64)> = None;
    for i in start..end {
        let mut c = RowCursor::new(batch.row(i));
        if c.row_header(schema.fields.len()).is_err() {
            continue;
        }
        for (j, f) in schema.fields.iter().enumerate().take(idx + 1) {
            match c.read(&f.ty) {
                Ok(ValueRef::Time(t)) if j == idx => {
                    out = Some(match out {
                        Some((lo, hi)) => (lo.min(t), hi.max(t)),
                        None => (t, t),
                    });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    out
}

impl<S, E> Stream for Batcher<S, E>
where
    S: Stream<Item = Result<Batch, E>> + Unpin,
    E: Unpin,
{
    type Item = Result<Batch, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(b)));
            }
            if let Some(e) = this.error.take() {
                return Poll::Ready(Some(Err(e)));
            }
            if this.done {
                if !this.window.is_empty() {
                    this.flush_window();
                    continue;
                }
                return Poll::Ready(None);
            }
            match this.inner.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(b))) => this.add(b),
                Poll::Ready(Some(Err(e))) => {
                    this.flush_window();
                    this.error = Some(e);
                }
                Poll::Ready(None) => this.done = true,
                Poll::Pending => {
                    let expired = match &mut this.timer {
                        Some(t) if !this.window.is_empty() => t.as_mut().poll(cx).is_ready(),
                        _ => false,
                    };
                    if expired {
                        this.flush_window();
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::types::{Field, Schema, SchemaRef, Type};
    use crate::value::Value;

    fn schema(name: &str) -> SchemaRef {
        Schema::new(
            name,
            vec![Field::new("ts", Type::Time), Field::new("n", Type::Count)],
        )
        .into_shared()
    }

    fn batch(s: &SchemaRef, from: u64, n: u64) -> Batch {
        let mut b = BatchBuilder::new(s.clone());
        for i in from..from + n {
            let mut e = b.begin_row();
            e.int(i as i64);
            e.uint(i);
            b.finish_row(Some(i as i64));
        }
        b.finish()
    }

    fn numbers(b: &Batch) -> Vec<u64> {
        b.to_values()
            .unwrap()
            .into_iter()
            .map(|r| match r[1] {
                Value::Count(n) => n,
                ref v => panic!("{v:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn coalesces_and_splits_in_order() {
        let s = schema("zeek.a");
        let input = vec![
            Ok::<_, ()>(batch(&s, 0, 3)),
            Ok(batch(&s, 3, 10)),
            Ok(batch(&s, 13, 2)),
        ];
        let cfg = BatchConfig {
            max_events: 4,
            ..BatchConfig::default()
        };
        let out: Vec<Batch> = Batcher::new(futures::stream::iter(input), cfg)
            .map(|r| r.unwrap())
            .collect()
            .await;
        let sizes: Vec<usize> = out.iter().map(Batch::len).collect();
        assert_eq!(sizes, vec![3, 4, 4, 4]);
        let all: Vec<u64> = out.iter().flat_map(numbers).collect();
        assert_eq!(all, (0..15).collect::<Vec<_>>());
        assert_eq!(out[1].ts_range(), Some((3, 6)));
    }

    #[tokio::test]
    async fn byte_limit_and_schema_change() {
        let a = schema("zeek.a");
        let b = schema("zeek.b");
        let row = batch(&a, 0, 1).byte_size();
        let input = vec![
            Ok::<_, ()>(batch(&a, 0, 5)),
            Ok(batch(&b, 5, 1)),
            Ok(batch(&a, 6, 1)),
        ];
        let cfg = BatchConfig {
            max_bytes: row * 2,
            ..BatchConfig::default()
        };
        let out: Vec<Batch> = Batcher::new(futures::stream::iter(input), cfg)
            .map(|r| r.unwrap())
            .collect()
            .await;
        let shape: Vec<(String, usize)> = out
            .iter()
            .map(|b| (b.schema().name.clone(), b.len()))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("zeek.a".into(), 2),
                ("zeek.a".into(), 2),
                ("zeek.a".into(), 1),
                ("zeek.b".into(), 1),
                ("zeek.a".into(), 1),
            ]
        );
        assert!(out.iter().all(|b| b.byte_size() <= row * 2));
    }

    fn mark_after(row: usize, offset: u64) -> Mark {
        Mark {
            row_start: row.saturating_sub(1),
            row_end: row,
            start: None,
            end: crate::checkpoint::FileCheckpoint {
                id: crate::checkpoint::FileId {
                    dev: 1,
                    ino: 2,
                    fp_len: 0,
                    fp_crc: 0,
                },
                path: "eve.json".into(),
                pos: crate::checkpoint::Position { offset, skip: 0 },
                done: false,
                raw: 0,
                header: String::new(),
                sum: None,
            },
        }
    }

    #[tokio::test]
    async fn interleaved_schemas_are_regrouped_per_window() {
        let a = schema("suricata.flow");
        let b = schema("suricata.dns");
        let c = schema("suricata.alert");
        // One event per line, types interleaved, each line's position marked after it.
        let kinds = [&a, &b, &a, &c, &b, &a, &a, &b, &c, &a];
        let input: Vec<Result<Batch, ()>> = kinds
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut x = batch(s, i as u64, 1);
                x.set_marks(vec![mark_after(1, 100 * (i as u64 + 1))]);
                Ok(x)
            })
            .collect();
        let cfg = BatchConfig {
            max_events: 6,
            ..BatchConfig::default()
        };
        let out: Vec<Batch> = Batcher::new(futures::stream::iter(input), cfg)
            .map(|r| r.unwrap())
            .collect()
            .await;
        let shape: Vec<(String, Vec<u64>, bool, Vec<u64>)> = out
            .iter()
            .map(|x| {
                (
                    x.schema().name.clone(),
                    numbers(x),
                    x.group_next(),
                    x.marks().iter().map(|m| m.end.pos.offset).collect(),
                )
            })
            .collect();
        let s = |n: &str| n.to_string();
        assert_eq!(
            shape,
            vec![
                // Window 1: lines 0..6, one batch per type, the positions on the last batch.
                (s("suricata.flow"), vec![0, 2, 5], true, vec![]),
                (s("suricata.dns"), vec![1, 4], true, vec![]),
                (
                    s("suricata.alert"),
                    vec![3],
                    false,
                    vec![100, 200, 300, 400, 500, 600]
                ),
                // Window 2: lines 6..10 (the end of input).
                (s("suricata.flow"), vec![6, 9], true, vec![]),
                (s("suricata.dns"), vec![7], true, vec![]),
                (
                    s("suricata.alert"),
                    vec![8],
                    false,
                    vec![700, 800, 900, 1000]
                ),
            ]
        );
        // The checkpoints of a group hold after its last batch's last row.
        for x in &out {
            assert!(x
                .marks()
                .iter()
                .all(|m| m.row_start == x.len() && m.row_end == x.len()));
        }
    }

    #[tokio::test]
    async fn without_regrouping_a_schema_change_ends_the_window() {
        let a = schema("suricata.flow");
        let b = schema("suricata.dns");
        let input = vec![
            Ok::<_, ()>(batch(&a, 0, 2)),
            Ok(batch(&b, 2, 1)),
            Ok(batch(&a, 3, 2)),
        ];
        let cfg = BatchConfig {
            regroup: false,
            ..BatchConfig::default()
        };
        let out: Vec<Batch> = Batcher::new(futures::stream::iter(input), cfg)
            .map(|r| r.unwrap())
            .collect()
            .await;
        let shape: Vec<(Vec<u64>, bool)> =
            out.iter().map(|x| (numbers(x), x.group_next())).collect();
        assert_eq!(
            shape,
            vec![(vec![0, 1], false), (vec![2], false), (vec![3, 4], false)]
        );
    }

    #[tokio::test]
    async fn a_window_of_one_schema_keeps_each_checkpoint_at_its_row() {
        let s = schema("zeek.conn");
        let input: Vec<Result<Batch, ()>> = (0..3)
            .map(|i| {
                let mut x = batch(&s, 2 * i, 2);
                x.set_marks(vec![mark_after(2, 10 * (i + 1))]);
                Ok(x)
            })
            .collect();
        let out: Vec<Batch> = Batcher::new(futures::stream::iter(input), BatchConfig::default())
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert_eq!(out.len(), 1);
        assert!(!out[0].group_next());
        let rows: Vec<(usize, u64)> = out[0]
            .marks()
            .iter()
            .map(|m| (m.row_end, m.end.pos.offset))
            .collect();
        assert_eq!(rows, vec![(2, 10), (4, 20), (6, 30)]);
    }

    #[tokio::test]
    async fn error_comes_after_pending_batch() {
        let s = schema("zeek.a");
        let input = vec![Ok(batch(&s, 0, 2)), Err("bad"), Ok(batch(&s, 2, 1))];
        let out: Vec<Result<Batch, &str>> =
            Batcher::new(futures::stream::iter(input), BatchConfig::default())
                .collect()
                .await;
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_ref().unwrap().len(), 2);
        assert_eq!(out[1].as_ref().unwrap_err(), &"bad");
        assert_eq!(out[2].as_ref().unwrap().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_flushes_partial_batch() {
        let s = schema("zeek.a");
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Batch, ()>>();
        let mut batcher = Batcher::new(
            rx,
            BatchConfig {
                timeout: Duration::from_millis(500),
                ..BatchConfig::default()
            },
        );
        tx.unbounded_send(Ok(batch(&s, 0, 3))).unwrap();
        let start = Instant::now();
        // Nothing is emitted before the timeout: the batch is not full and input is open.
        let early = tokio::time::timeout(Duration::from_millis(400), batcher.next()).await;
        assert!(early.is_err(), "flushed before the timeout");
        tx.unbounded_send(Ok(batch(&s, 3, 1))).unwrap();
        let b = batcher.next().await.unwrap().unwrap();
        assert_eq!(numbers(&b), vec![0, 1, 2, 3]);
        // The timer runs from the first event, not the last one.
        assert_eq!(start.elapsed(), Duration::from_millis(500));
        drop(tx);
        assert!(batcher.next().await.is_none());
    }
}

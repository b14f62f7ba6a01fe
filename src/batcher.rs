//! Re-batching of a batch stream by size, bytes and time, shaped like Vector's `Batcher` and
//! `BatchConfig`.
//!
//! [`Batcher`] wraps a `Stream<Item = Result<Batch, E>>` and emits batches that
//!
//! - hold events of one schema only: consecutive input batches of the same schema are
//!   coalesced with [`Batch::append`] while the result stays within the limits; a schema
//!   change, or an input batch that would not fit, emits the batch being built at once (as
//!   Vector's batcher does: inputs are not copied to top a batch up, so a stream of full input
//!   batches passes through without a copy);
//! - hold at most [`BatchConfig::max_events`] events and at most
//!   [`BatchConfig::max_bytes`] encoded bytes (a single event larger than `max_bytes` goes
//!   alone in its batch): bigger inputs are cut, never dropped;
//! - are flushed when [`BatchConfig::timeout`] has passed since the first event of the batch
//!   being built arrived (so a live, slow source still makes progress), and at end of input.
//!
//! Order is kept: the output holds exactly the input events in the input order. An input
//! error is passed on after the batch being built has been emitted.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::batch::Batch;
use crate::setting::InvalidSetting;
use crate::value::{RowCursor, ValueRef};

/// Limits of the batches a [`Batcher`] emits: the `[transforms.NAME] type = "batch"` table of
/// a pipeline file (keys `max_events`, `max_bytes`, `timeout`) and `weir import`'s
/// `--batch-size` and `--batch-timeout`.
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
        }
    }
}

/// A stream adapter that re-batches by schema, size, bytes and time; see the module docs.
pub struct Batcher<S, E> {
    inner: S,
    config: BatchConfig,
    /// The batch being built, and the time its first event arrived.
    pending: Option<Batch>,
    /// The flush deadline of `pending` (created on first use, within the runtime).
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
            pending: None,
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

    fn flush_pending(&mut self) {
        if let Some(b) = self.pending.take() {
            if !b.is_empty() || !b.marks().is_empty() {
                self.ready.push_back(b);
            }
        }
    }

    fn full(&self, b: &Batch) -> bool {
        b.len() >= self.config.max_events || b.byte_size() >= self.config.max_bytes
    }

    fn add(&mut self, batch: Batch) {
        if batch.is_empty() {
            // Checkpoints without rows (see `crate::checkpoint`) go after the rows before them.
            if !batch.marks().is_empty() {
                match &mut self.pending {
                    Some(p) => {
                        let n = p.len();
                        for m in batch.marks() {
                            p.push_mark(crate::checkpoint::Mark {
                                row_start: n,
                                row_end: n,
                                ..m.clone()
                            });
                        }
                    }
                    None => self.ready.push_back(batch),
                }
            }
            return;
        }
        if let Some(p) = &mut self.pending {
            let fits = p.schema() == batch.schema()
                && p.len() + batch.len() <= self.config.max_events
                && p.byte_size() + batch.byte_size() <= self.config.max_bytes;
            if fits {
                p.append(&batch);
                if self.full_pending() {
                    self.flush_pending();
                }
                return;
            }
            // Another schema, or the input does not fit: the pending batch goes as it is
            // (rather than copying the input to top it up), and the input starts a new one.
            self.flush_pending();
        }
        if batch.len() <= self.config.max_events && batch.byte_size() <= self.config.max_bytes {
            self.start_pending(batch);
        } else {
            // Too big on its own: cut it, emit the full pieces, keep the last one pending.
            let mut pieces = split(&batch, &self.config);
            let last = pieces.pop();
            self.ready.extend(pieces);
            if let Some(last) = last {
                self.start_pending(last);
            }
        }
        if self.full_pending() {
            self.flush_pending();
        }
    }

    fn full_pending(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| self.full(p))
    }

    fn start_pending(&mut self, batch: Batch) {
        self.pending = Some(batch);
        let deadline = Instant::now() + self.config.timeout;
        match &mut self.timer {
            Some(t) => t.as_mut().reset(deadline),
            None => self.timer = Some(Box::pin(tokio::time::sleep_until(deadline))),
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
    out.set_marks(crate::checkpoint::Mark::slice(batch.marks(), start, end));
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
                if this.pending.is_some() {
                    this.flush_pending();
                    continue;
                }
                return Poll::Ready(None);
            }
            match this.inner.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(b))) => this.add(b),
                Poll::Ready(Some(Err(e))) => {
                    this.flush_pending();
                    this.error = Some(e);
                }
                Poll::Ready(None) => this.done = true,
                Poll::Pending => {
                    let expired = match (&this.pending, &mut this.timer) {
                        (Some(_), Some(t)) => t.as_mut().poll(cx).is_ready(),
                        _ => false,
                    };
                    if expired {
                        this.flush_pending();
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

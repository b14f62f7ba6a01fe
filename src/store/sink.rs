//! The segment-writer sink: a [`futures::Sink`] of batches backed by a [`Store`] running on
//! its own thread, with the costly part of adding a batch (compressing its rows and building
//! its sketch: [`Preparer`]) done beforehand on a few prepare threads.
//!
//! # Order and bounds
//!
//! Each batch sent is handed to the prepare threads (a shared queue: whichever is free takes
//! it) together with a one-shot channel for its result, and that channel's receiver is queued
//! for the writer in the order the batches were sent. The writer waits for the results in that
//! order, so batches reach the store exactly as sent, whichever thread prepared them. The
//! writer's queue holds [`QUEUE_PER_THREAD`] receivers per prepare thread, so at most that many
//! plus one batches are in the sink at a time (queued, being prepared, or being written): `poll_ready` makes producers wait beyond
//! that. Nothing is acknowledged before the store has appended it; a batch that was only
//! prepared is as unacknowledged as one still in the producer's hands.
//!
//! # Groups
//!
//! Batches sent with [`Batch::group_next`] set are held by the writer until the group's last
//! batch arrives, and the whole group is appended at once ([`Store::append_group`]): a group is
//! committed together or not at all. A flush in the middle of a group makes durable what came
//! before the group (the group is not acknowledged yet). A group whose last batch never comes
//! (the input ends within it) is appended when the input ends; one growing past the maximum
//! segment size (its stages lost its end) is appended as it is.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

use super::{CommitHook, OpenReport, Result, Store, StoreError, StoreOptions, Summary};
use crate::batch::Batch;
use crate::segment::{PreparedBatch, Preparer};

/// A batch on its way to the writer: prepared by a prepare thread (or, when empty, as sent).
type Prepared = oneshot::Receiver<(Batch, Option<PreparedBatch>)>;

enum Msg {
    Batch(Prepared),
    Flush(oneshot::Sender<Result<()>>),
    /// Time passed: the hook may commit what it has (see [`HOOK_TICK`]).
    Tick,
}

/// How often a sink with a [`CommitHook`] calls it without batches (when the input is idle),
/// so that what the hook produces on its own (a background retro match's sightings) is
/// committed without waiting for input.
pub const HOOK_TICK: std::time::Duration = std::time::Duration::from_millis(500);

/// A batch to prepare, and where its result goes.
type Job = (Batch, oneshot::Sender<(Batch, Option<PreparedBatch>)>);

/// The most prepare threads: compressing and sketching cost about as much as parsing, so one
/// per core (the writer itself then only lays out bytes), and no more than this.
const MAX_PREPARE_THREADS: usize = 4;

/// Queue length between the sink and the writer thread, per prepare thread: with every
/// prepare thread busy, one batch queued behind them and one being written, `poll_ready`
/// makes producers wait instead of buffering without bound.
const QUEUE_PER_THREAD: usize = 1;

/// A backpressured [`futures::Sink`] of batches into a store.
///
/// The store's blocking work (WAL writes, segment building, fsyncs) runs on a dedicated thread;
/// `poll_ready` is pending while a batch is already queued for it. `poll_flush` waits until
/// every batch sent so far is appended and made durable ([`Store::flush`]); `poll_close` seals
/// the active segment and releases the lock, after which [`ArchiveSink::summary`] tells what
/// was written. An error of the store (e.g. a full disk) ends the writer and is returned by
/// the next call.
pub struct ArchiveSink {
    /// The prepare threads' queue; dropping it ends them.
    jobs: std::sync::mpsc::Sender<Job>,
    tx: PollSender<Msg>,
    flush: Option<oneshot::Receiver<Result<()>>>,
    done: Option<oneshot::Receiver<Result<Summary>>>,
    summary: Option<Summary>,
}

impl std::fmt::Debug for ArchiveSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArchiveSink")
            .field("summary", &self.summary)
            .finish_non_exhaustive()
    }
}

impl ArchiveSink {
    /// Opens the store in `dir` for writing ([`Store::open_writer`]) and starts its thread.
    pub fn open(dir: impl AsRef<Path>, opts: StoreOptions) -> Result<(ArchiveSink, OpenReport)> {
        let (store, report) = Store::open_writer(dir, opts)?;
        Ok((ArchiveSink::new(store)?, report))
    }

    /// Runs an open store on its own thread behind a sink, with prepare threads in front of it
    /// (see the module docs).
    pub fn new(store: Store) -> Result<ArchiveSink> {
        ArchiveSink::with_hook(store, None)
    }

    /// [`ArchiveSink::new`] with a [`CommitHook`] called on every group before it commits.
    pub fn with_hook(
        mut store: Store,
        mut hook: Option<Box<dyn CommitHook>>,
    ) -> Result<ArchiveSink> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_PREPARE_THREADS);
        let (jobs, job_rx) = std::sync::mpsc::channel::<Job>();
        let job_rx = std::sync::Arc::new(std::sync::Mutex::new(job_rx));
        let opts = store.options();
        for i in 0..threads {
            let job_rx = job_rx.clone();
            let mut preparer = Preparer::new(opts.compression, opts.sketches);
            // The other prepare threads already use the other cores.
            preparer.set_split(threads == 1);
            std::thread::Builder::new()
                .name(format!("weir-prepare-{i}"))
                .spawn(move || loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((batch, reply)) = job else { return };
                    let prepared = preparer.prepare(&batch);
                    let _ = reply.send((batch, Some(prepared)));
                })
                .map_err(StoreError::WriterSpawn)?;
        }
        let (tx, mut rx) = mpsc::channel::<Msg>(QUEUE_PER_THREAD * threads);
        if hook.is_some() {
            // A weak sender: the ticker never keeps the writer alive once the sink is closed.
            let weak = tx.downgrade();
            std::thread::Builder::new()
                .name("weir-hook-tick".into())
                .spawn(move || loop {
                    std::thread::sleep(HOOK_TICK);
                    let Some(tx) = weak.upgrade() else { return };
                    // A full queue has batches coming: they call the hook anyway.
                    let _ = tx.try_send(Msg::Tick);
                })
                .map_err(StoreError::WriterSpawn)?;
        }
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("weir-archive".into())
            .spawn(move || {
                // The batches of the group being received (see `Batch::group_next`), and their
                // bytes.
                let mut group: Vec<(Batch, Option<PreparedBatch>)> = Vec::new();
                let mut group_bytes = 0u64;
                let max_group = store.options().max_segment_size;
                let mut run = || -> Result<()> {
                    while let Some(msg) = rx.blocking_recv() {
                        match msg {
                            Msg::Batch(prepared) => {
                                let (batch, prepared) = prepared.blocking_recv().map_err(|_| {
                                    StoreError::WriterGone(
                                        "a prepare thread stopped (panicked)".into(),
                                    )
                                })?;
                                let more = batch.group_next();
                                group_bytes += batch.byte_size() as u64;
                                group.push((batch, prepared));
                                // A group that never ends (batches whose stages lost its last
                                // one) is cut where it could not fit in a segment anyway.
                                if !more || group_bytes > max_group {
                                    group_bytes = 0;
                                    let group = std::mem::take(&mut group);
                                    commit(&mut store, &mut hook, group)?;
                                }
                            }
                            Msg::Tick => {
                                if group.is_empty() {
                                    if let Some(h) = hook.as_mut() {
                                        let extra = h
                                            .before_commit(&[], store.next_id())
                                            .map_err(StoreError::Hook)?;
                                        if let Some(b) = extra {
                                            store.append_group(vec![(b, None)])?;
                                        }
                                    }
                                }
                            }
                            Msg::Flush(reply) => {
                                let r = store.flush();
                                let failed = r.is_err();
                                let _ = reply.send(r);
                                if failed {
                                    return Ok(());
                                }
                            }
                        }
                    }
                    // The input ended within a group (a stage failed or stopped): its batches
                    // are appended rather than lost.
                    if !group.is_empty() {
                        let group = std::mem::take(&mut group);
                        commit(&mut store, &mut hook, group)?;
                    }
                    if let Some(h) = hook.as_mut() {
                        while let Some(b) = h.finish(store.next_id()).map_err(StoreError::Hook)? {
                            store.append_group(vec![(b, None)])?;
                        }
                    }
                    Ok(())
                };
                let result = match run() {
                    Ok(()) => store.close(),
                    Err(e) => Err(e),
                };
                let _ = done_tx.send(result);
            })
            .map_err(StoreError::WriterSpawn)?;
        Ok(ArchiveSink {
            jobs,
            tx: PollSender::new(tx),
            flush: None,
            done: Some(done_rx),
            summary: None,
        })
    }

    /// What was written, once the sink is closed.
    pub fn summary(&self) -> Option<&Summary> {
        self.summary.as_ref()
    }

    /// Waits for the writer thread to finish and returns its outcome.
    fn poll_done(&mut self, cx: &mut Context<'_>) -> Poll<Result<Summary>> {
        if let Some(s) = &self.summary {
            return Poll::Ready(Ok(s.clone()));
        }
        let Some(rx) = self.done.as_mut() else {
            return Poll::Ready(Err(StoreError::WriterGone(
                "the writer failed earlier".into(),
            )));
        };
        let r = ready!(Pin::new(rx).poll(cx));
        self.done = None;
        Poll::Ready(match r {
            Ok(Ok(s)) => {
                self.summary = Some(s.clone());
                Ok(s)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::WriterGone("the writer thread panicked".into())),
        })
    }

    /// The channel is closed: the writer stopped, report why.
    fn poll_gone<T>(&mut self, cx: &mut Context<'_>) -> Poll<Result<T>> {
        match ready!(self.poll_done(cx)) {
            Ok(_) => Poll::Ready(Err(StoreError::WriterGone("the sink is closed".into()))),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

/// Appends a group, with what the hook adds to it.
fn commit(
    store: &mut Store,
    hook: &mut Option<Box<dyn CommitHook>>,
    mut group: Vec<(Batch, Option<PreparedBatch>)>,
) -> Result<()> {
    if let Some(hook) = hook.as_mut() {
        let batches: Vec<&Batch> = group
            .iter()
            .map(|(b, _)| b)
            .filter(|b| !b.is_empty())
            .collect();
        if !batches.is_empty() {
            if let Some(extra) = hook
                .before_commit(&batches, store.next_id())
                .map_err(StoreError::Hook)?
            {
                group.push((extra, None));
            }
        }
    }
    store.append_group(group)?;
    Ok(())
}

impl futures::Sink<Batch> for ArchiveSink {
    type Error = StoreError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        match ready!(this.tx.poll_reserve(cx)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(_) => this.poll_gone(cx),
        }
    }

    fn start_send(self: Pin<&mut Self>, item: Batch) -> Result<()> {
        let this = self.get_mut();
        let (reply, prepared) = oneshot::channel();
        if item.is_empty() {
            // Checkpoints only: nothing to prepare.
            let _ = reply.send((item, None));
        } else if let Err(std::sync::mpsc::SendError((item, reply))) = this.jobs.send((item, reply))
        {
            // No prepare thread left: the writer prepares it.
            let _ = reply.send((item, None));
        }
        this.tx
            .send_item(Msg::Batch(prepared))
            .map_err(|_| StoreError::WriterGone("the writer stopped".into()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        if this.flush.is_none() {
            if this.tx.is_closed() {
                return if this.summary.is_some() {
                    Poll::Ready(Ok(()))
                } else {
                    this.poll_gone(cx)
                };
            }
            if ready!(this.tx.poll_reserve(cx)).is_err() {
                return this.poll_gone(cx);
            }
            let (reply, rx) = oneshot::channel();
            if this.tx.send_item(Msg::Flush(reply)).is_err() {
                return this.poll_gone(cx);
            }
            this.flush = Some(rx);
        }
        let Some(rx) = this.flush.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let r = ready!(Pin::new(rx).poll(cx));
        this.flush = None;
        match r {
            Ok(r) => Poll::Ready(r),
            Err(_) => this.poll_gone(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        this.tx.close();
        ready!(this.poll_done(cx)).map(|_| ())?;
        Poll::Ready(Ok(()))
    }
}

//! An ordered pool: jobs run on worker threads, their results come back in the order the jobs
//! were submitted. The search evaluates batches on one (`query::search`), the Parquet lake
//! builds its record batches on another (`codec::arrow::parallel`).
//!
//! At most `window` jobs are outstanding at a time (running, queued, or finished and waiting
//! for an earlier one): that bounds the memory of a search to `window` batches of results,
//! whatever the archive's size. The window starts at the number of threads and doubles, up to
//! its maximum, each time a result is taken, so a consumer that stops after its first results
//! (`weir export -n 1`) has made the pool read little ahead. Results that need no worker
//! ([`OrderedPool::push_ready`]) take their place in the order too. With one thread, jobs run
//! at once on the caller's thread and no thread is started.
//!
//! Threads start at the first job. Dropping the pool waits for the jobs that are running (at
//! most one per thread); queued ones are not started.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The work function shared by the threads.
type Work<J, R> = Arc<dyn Fn(J) -> R + Send + Sync>;

/// A job panicked on its worker thread (a bug): its result is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerLost;

/// See the [module docs](self).
pub(crate) struct OrderedPool<J, R> {
    work: Work<J, R>,
    threads: usize,
    /// The queue to the workers (`None` before the first job).
    queue: Option<SyncSender<(u64, J)>>,
    results: Option<Receiver<(u64, Result<R, WorkerLost>)>>,
    handles: Vec<JoinHandle<()>>,
    /// Set when the pool is dropped: queued jobs are not started.
    stop: Arc<AtomicBool>,
    /// Results by submission order, from `next_out` on (`None`: not back yet).
    slots: VecDeque<Option<Result<R, WorkerLost>>>,
    next_out: u64,
    window: usize,
    max_window: usize,
}

impl<J, R> std::fmt::Debug for OrderedPool<J, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrderedPool")
            .field("threads", &self.threads)
            .field("outstanding", &self.slots.len())
            .field("window", &self.window)
            .finish()
    }
}

impl<J: Send + 'static, R: Send + 'static> OrderedPool<J, R> {
    /// A pool of `threads` threads (at least one) running `work`, with at most `max_window`
    /// jobs outstanding (at least `threads`).
    pub(crate) fn new(
        threads: usize,
        max_window: usize,
        work: impl Fn(J) -> R + Send + Sync + 'static,
    ) -> OrderedPool<J, R> {
        let threads = threads.max(1);
        OrderedPool {
            work: Arc::new(work),
            threads,
            queue: None,
            results: None,
            handles: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            slots: VecDeque::new(),
            next_out: 0,
            window: threads,
            max_window: max_window.max(threads),
        }
    }

    /// Whether another job or ready result fits into the window.
    pub(crate) fn has_room(&self) -> bool {
        self.slots.len() < self.window
    }

    /// Runs `job` (on a worker, or here with one thread); its result comes after those of
    /// everything submitted before.
    pub(crate) fn submit(&mut self, job: J) {
        if self.threads == 1 {
            let r = (self.work)(job);
            self.slots.push_back(Some(Ok(r)));
            return;
        }
        let seq = self.next_out + self.slots.len() as u64;
        self.slots.push_back(None);
        let queue = self.queue.get_or_insert_with(|| {
            // The queue holds at most the window's jobs, so sending never blocks.
            let (tx, rx) = mpsc::sync_channel::<(u64, J)>(self.max_window);
            let (done_tx, done_rx) = mpsc::channel::<(u64, Result<R, WorkerLost>)>();
            let rx = Arc::new(Mutex::new(rx));
            for _ in 0..self.threads {
                let (rx, done_tx, work) = (rx.clone(), done_tx.clone(), self.work.clone());
                let stop = self.stop.clone();
                self.handles.push(std::thread::spawn(move || loop {
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok((seq, job)) = next else { return };
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    // A panic (a bug) costs its job's result, not the search.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job)))
                        .map_err(|_| WorkerLost);
                    if done_tx.send((seq, r)).is_err() {
                        return;
                    }
                }));
            }
            self.results = Some(done_rx);
            tx
        });
        // Fails only when every worker is gone; `next` reports that.
        let _ = queue.send((seq, job));
    }

    /// A result known without a job; it comes after everything submitted before.
    pub(crate) fn push_ready(&mut self, result: R) {
        self.slots.push_back(Some(Ok(result)));
    }

    /// The next result in submission order, waiting for it (`None`: nothing outstanding).
    pub(crate) fn next(&mut self) -> Option<Result<R, WorkerLost>> {
        loop {
            match self.slots.front_mut()? {
                Some(_) => break,
                None => {
                    let got = self.results.as_ref().map(|rx| rx.recv());
                    let Some(Ok((seq, r))) = got else {
                        // No worker is left (never so: they outlive the pool).
                        self.slots.pop_front();
                        self.next_out += 1;
                        return Some(Err(WorkerLost));
                    };
                    let at = seq.wrapping_sub(self.next_out) as usize;
                    if let Some(slot) = self.slots.get_mut(at) {
                        *slot = Some(r);
                    }
                }
            }
        }
        let r = self.slots.pop_front().flatten()?;
        self.next_out += 1;
        self.window = (self.window * 2).min(self.max_window);
        Some(r)
    }
}

impl<J, R> Drop for OrderedPool<J, R> {
    fn drop(&mut self) {
        // Each worker ends after its current job, leaving the queued ones.
        self.stop.store(true, Ordering::Relaxed);
        self.queue = None;
        self.results = None;
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_submission_order_within_the_window() {
        for threads in [1, 2, 4] {
            let mut pool = OrderedPool::new(threads, 8, |i: u64| {
                // Later jobs finish first.
                std::thread::sleep(std::time::Duration::from_micros((50 - i % 50) * 20));
                i * 10
            });
            let mut out = Vec::new();
            let mut next = 0u64;
            loop {
                while pool.has_room() && next < 200 {
                    if next.is_multiple_of(7) {
                        pool.push_ready(next * 10);
                    } else {
                        pool.submit(next);
                    }
                    next += 1;
                    assert!(pool.slots.len() <= 8);
                }
                match pool.next() {
                    Some(r) => out.push(r.unwrap()),
                    None => break,
                }
            }
            assert!(pool.slots.is_empty());
            assert_eq!(
                out,
                (0..200).map(|i| i * 10).collect::<Vec<_>>(),
                "{threads}"
            );
        }
    }

    #[test]
    fn dropping_a_busy_pool_stops_its_threads() {
        let mut pool = OrderedPool::new(2, 16, |i: u32| i + 1);
        for i in 0..2 {
            pool.submit(i);
        }
        assert_eq!(pool.next(), Some(Ok(1)));
        drop(pool);
    }

    #[test]
    fn a_job_that_panics_loses_only_its_result() {
        let mut pool = OrderedPool::new(2, 4, |i: u32| {
            assert!(i != 1, "job 1 fails (this panic is expected)");
            i
        });
        for i in 0..3 {
            pool.submit(i);
        }
        assert_eq!(pool.next(), Some(Ok(0)));
        assert_eq!(pool.next(), Some(Err(WorkerLost)));
        assert_eq!(pool.next(), Some(Ok(2)));
        assert_eq!(pool.next(), None);
    }
}

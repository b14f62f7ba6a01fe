//! An ordered pool: jobs run on worker threads and on the caller's, their results come back in
//! the order the jobs were submitted. The search evaluates batches on one (`query::search`), the Parquet lake
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
//! A pool of `n` threads starts `n - 1` at the first job: the caller is the last one, running
//! queued jobs while it waits for a result ([`OrderedPool::next`]). Dropping the pool waits
//! for the jobs that are running (at most one per thread); queued ones are not started.
//!
//! For a few large pieces of work cut one per core, [`map_scoped`] runs them on scoped threads
//! instead (no pool, no window).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// `f` of each of `parts`, in their order: the first on the caller's thread, each other on a
/// scoped thread of its own (the parts are few and large, one per core; one part starts no
/// thread). A panic on another thread is resumed on the caller's.
pub(crate) fn map_scoped<T: Send, R: Send>(
    parts: impl IntoIterator<Item = T>,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let f = &f;
    std::thread::scope(|scope| {
        let mut parts = parts.into_iter();
        let first = parts.next();
        let others: Vec<_> = parts.map(|p| scope.spawn(move || f(p))).collect();
        let mut out: Vec<R> = first.map(f).into_iter().collect();
        for h in others {
            out.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        out
    })
}

/// The work function shared by the threads.
type Work<J, R> = Arc<dyn Fn(J) -> R + Send + Sync>;

/// A job panicked on its worker thread (a bug): its result is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerLost;

/// What the caller and the workers share, under one lock.
struct State<J, R> {
    /// Jobs not started, in submission order, with their sequence numbers.
    queue: VecDeque<(u64, J)>,
    /// Results back from the workers, not yet put in their slots.
    done: Vec<(u64, Result<R, WorkerLost>)>,
    /// Set when the pool is dropped: queued jobs are not started.
    stop: bool,
    /// Workers waiting for a job.
    idle: usize,
    /// Whether the caller waits for a result.
    waiting: bool,
}

struct Shared<J, R> {
    state: Mutex<State<J, R>>,
    /// A job was queued, or the pool stops.
    jobs: Condvar,
    /// A result came back.
    results: Condvar,
}

impl<J, R> Shared<J, R> {
    fn lock(&self) -> MutexGuard<'_, State<J, R>> {
        // A job's panic never happens under the lock, so poisoning says nothing.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// See the [module docs](self).
pub(crate) struct OrderedPool<J, R> {
    work: Work<J, R>,
    threads: usize,
    shared: Arc<Shared<J, R>>,
    handles: Vec<JoinHandle<()>>,
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

/// Runs one job; a panic (a bug) costs its result, not the search.
fn run_one<J, R>(work: &Work<J, R>, job: J) -> Result<R, WorkerLost> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job))).map_err(|_| WorkerLost)
}

impl<J: Send + 'static, R: Send + 'static> OrderedPool<J, R> {
    /// A pool of `threads` threads (at least one, the caller's included) running `work`, with
    /// at most `max_window` jobs outstanding (at least `threads`).
    pub(crate) fn new(
        threads: usize,
        max_window: usize,
        work: impl Fn(J) -> R + Send + Sync + 'static,
    ) -> OrderedPool<J, R> {
        let threads = threads.max(1);
        OrderedPool {
            work: Arc::new(work),
            threads,
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    done: Vec::new(),
                    stop: false,
                    idle: 0,
                    waiting: false,
                }),
                jobs: Condvar::new(),
                results: Condvar::new(),
            }),
            handles: Vec::new(),
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

    /// Runs `job` (on a worker or, while it waits, on the caller's thread; at once with one
    /// thread); its result comes after those of everything submitted before.
    pub(crate) fn submit(&mut self, job: J) {
        if self.threads == 1 {
            let r = run_one(&self.work, job);
            self.slots.push_back(Some(r));
            return;
        }
        if self.handles.is_empty() {
            self.start_workers();
        }
        let seq = self.next_out + self.slots.len() as u64;
        self.slots.push_back(None);
        let mut state = self.shared.lock();
        state.queue.push_back((seq, job));
        if state.idle > 0 {
            self.shared.jobs.notify_one();
        }
    }

    /// The `threads - 1` workers (the caller is the last thread).
    fn start_workers(&mut self) {
        for _ in 1..self.threads {
            let (shared, work) = (self.shared.clone(), self.work.clone());
            self.handles.push(std::thread::spawn(move || loop {
                let (seq, job) = {
                    let mut state = shared.lock();
                    loop {
                        if state.stop {
                            return;
                        }
                        if let Some(next) = state.queue.pop_front() {
                            break next;
                        }
                        state.idle += 1;
                        state = shared.jobs.wait(state).unwrap_or_else(|e| e.into_inner());
                        state.idle -= 1;
                    }
                };
                let r = run_one(&work, job);
                let mut state = shared.lock();
                state.done.push((seq, r));
                if state.waiting {
                    shared.results.notify_one();
                }
            }));
        }
    }

    /// A result known without a job; it comes after everything submitted before.
    pub(crate) fn push_ready(&mut self, result: R) {
        self.slots.push_back(Some(Ok(result)));
    }

    /// Puts a result in its slot.
    fn place(&mut self, seq: u64, r: Result<R, WorkerLost>) {
        let at = seq.wrapping_sub(self.next_out) as usize;
        if let Some(slot) = self.slots.get_mut(at) {
            *slot = Some(r);
        }
    }

    /// The next result in submission order (`None`: nothing outstanding). Until it is back,
    /// the caller runs queued jobs itself, and waits only when none is left: a thread per
    /// core and no switch between them while there is work (a result handed from a worker
    /// to a caller that slept cost two switches per batch).
    pub(crate) fn next(&mut self) -> Option<Result<R, WorkerLost>> {
        while self.slots.front()?.is_none() {
            let mut state = self.shared.lock();
            let back = std::mem::take(&mut state.done);
            let job = if back.is_empty() {
                state.queue.pop_front()
            } else {
                None
            };
            if back.is_empty() && job.is_none() {
                // Nothing to run here, and the front is on a worker: wait for it.
                state.waiting = true;
                let mut state = self
                    .shared
                    .results
                    .wait_while(state, |s| s.done.is_empty())
                    .unwrap_or_else(|e| e.into_inner());
                state.waiting = false;
                continue;
            }
            drop(state);
            for (seq, r) in back {
                self.place(seq, r);
            }
            if let Some((seq, job)) = job {
                let r = run_one(&self.work, job);
                self.place(seq, r);
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
        self.shared.lock().stop = true;
        self.shared.jobs.notify_all();
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
    fn the_caller_runs_jobs_while_it_waits() {
        // Job 0 is slow: whichever thread takes it, the other runs the rest.
        let mut pool = OrderedPool::new(2, 8, |i: u32| {
            if i == 0 {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            (i, std::thread::current().id())
        });
        for i in 0..4 {
            pool.submit(i);
        }
        let mut ran = Vec::new();
        while let Some(r) = pool.next() {
            ran.push(r.unwrap());
        }
        assert_eq!(ran.iter().map(|r| r.0).collect::<Vec<_>>(), [0, 1, 2, 3]);
        let here = std::thread::current().id();
        assert!(ran.iter().any(|r| r.1 == here), "{ran:?}");
        assert!(ran.iter().any(|r| r.1 != here), "{ran:?}");
        assert_eq!(pool.handles.len(), 1, "one worker beside the caller");
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

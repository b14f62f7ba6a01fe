//! What a writer may do with a group of batches just before it commits: the commit hook.
//!
//! An [`ArchiveSink`](super::ArchiveSink) with a hook hands it every group of batches it is
//! about to append ([`Store::append_group`](super::Store::append_group)), with the ID its
//! first event will get; a batch the hook returns is appended *in the same group*, after
//! them, so it is committed atomically with the batches it was made from (one WAL record:
//! after a crash both are there or neither is). Live matching
//! ([`crate::detect::LiveMatch`]) uses this to commit each sighting with its evidence.
//!
//! The hook runs on the writer's thread, so its time is ingest's time; it is never called
//! while the write-ahead log is replayed (what the log holds was matched when it was
//! written). When the input is idle it is also called without batches every
//! [`HOOK_TICK`](super::HOOK_TICK), and a batch it returns then is committed alone.

use crate::batch::Batch;

/// Called with each group of batches before it is committed (see the module docs).
pub trait CommitHook: Send {
    /// `batches`: the group's batches with rows, in order; the first event of the first gets
    /// `first_id`, and each next batch the IDs after the previous one's. Returns a batch to
    /// commit with them (after them), or `None`; an error fails the write (nothing of the
    /// group is committed) with the message.
    fn before_commit(&mut self, batches: &[&Batch], first_id: u64)
        -> Result<Option<Batch>, String>;

    /// Called when the input has ended, after its last group committed, and again after each
    /// batch it returns has committed (alone, its first event getting `first_id`), until it
    /// returns `None`; then the writer closes. What the hook still has in progress (a
    /// background retro match) is finished here. By default nothing.
    fn finish(&mut self, first_id: u64) -> Result<Option<Batch>, String> {
        let _ = first_id;
        Ok(None)
    }
}

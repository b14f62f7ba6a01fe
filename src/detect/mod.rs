//! Detection: live matching of indicator sets and Sigma rules as batches commit, and the
//! `weir.sighting` events that record each match.
//!
//! - [`sighting`]: the `weir.sighting` schema and a builder of its batches.
//! - [`live`]: [`LiveMatch`], the writer's [`crate::store::CommitHook`].
//! - [`retro`]: [`RetroRecorder`], which writes the sightings of a retro match, each once.
//! - `background.rs`: retro matching on a thread beside a writer, its sightings committed by
//!   the writer.
//! - [`idle`]: [`IdleRetro`], retro matching by `weir serve` when nothing writes its archive.
//! - `stamp.rs`: what identifies a version of a set file without reading it.
//! - [`read`]: sightings read back as JSON, by their own IDs (the API and the webhook).
//!
//! # Live matching
//!
//! A writer of an archive (`weir import`, `weir run`, and the pipelines of `weir serve`) runs
//! [`LiveMatch`] on every group of batches just before it commits them: the rows are matched
//! against every indicator set stored in the archive (`DIR/intel/*.json`, see
//! [`crate::intel`]) and every Sigma rule loaded with `--rules` (pipeline key `rules_dir`),
//! and the sightings go into a `weir.sighting` batch that is committed **in the same group**
//! (one write-ahead log record: [`crate::store::CommitHook`]). So a sighting exists exactly
//! when its evidence does: a crash before the commit loses both (the input is read again on
//! resume and matched again), a crash after it keeps both, and the log's replay never matches
//! again. Events of `weir.*` schemas (sightings themselves) are never matched.
//!
//! Sets are read again when their file changes (checked before every commit: one directory
//! listing and one `stat` per set), so `weir intel add` and `weir intel remove` take effect
//! on a running import at its next commit; an indicator stops matching at its `valid_until`
//! (compared with the clock at the commit). A set file that cannot be read (a damaged copy)
//! keeps the previous version matching, with a warning. A Sigma rule is checked when it is
//! loaded (an unsupported feature is an error naming its file and line) and typed against the
//! schemas of its logsource as their batches arrive.
//!
//! # The `weir.sighting` event
//!
//! | field | type | what |
//! | --- | --- | --- |
//! | `ts` | time | the evidence's time (its `ts`; `timestamp` in EVE), or the time of the match if it has none |
//! | `event_id` | count | the evidence's event ID: `weir get ID` shows it |
//! | `event_type` | string | the evidence's schema, e.g. `zeek.conn` |
//! | `matcher` | enum | `intel` or `sigma` |
//! | `name` | string | the set's name, or the rule's `id` (its file's name without one) |
//! | `indicator` | string | the indicator's canonical value, or the rule's title |
//! | `indicator_type` | enum | `addr`, `subnet`, `domain`, `url`, `file_hash`, `cert_hash`, `software`, `user_name`, `email`, or `sigma` |
//! | `field` | string | the field that matched (unset for a rule) |
//! | `value` | string | the value that matched (for a URL, host and path; unset for a rule) |
//! | `source`, `description` | string | the indicator's metadata |
//! | `confidence` | count | the indicator's confidence |
//! | `mode` | enum | `live` (matched as it was committed) or `retro` |
//!
//! One sighting per event, indicator (or rule) and field. A sighting's own event ID follows
//! those of the group it was found in.

mod background;
pub mod idle;
pub mod live;
pub mod read;
pub mod retro;
pub mod sighting;
mod stamp;

pub use idle::IdleRetro;
pub use live::LiveMatch;
pub use retro::{RecordError, RetroRecorder};
pub use sighting::{sighting_schema, SightingBatch, SightingRow, SIGHTING_SCHEMA};

//! What a chain will do over an archive, without running it ([`Explain`]): its physical
//! plan and the pruning of its scan, as text (`weir export --explain`, `weir count
//! --explain`) or JSON (the API's `"explain": true`).
//!
//! Text: the plan (`physical/display.rs`), then `pruning`: the segments the catalog keeps
//! and the batches their metadata keeps, then the write-ahead log's batches. JSON: `{"plan":
//! ..., "pruning": {` the fields of [`Pruning`] `}, "warnings": [...]}`.

use std::fmt;

use serde_json::{json, Value as Json};

use super::physical::Plan;
use crate::query::search::Pruning;

/// A chain's plan and what the catalog and the sketches keep for it ([`super::Chain::explain`]).
#[derive(Debug, Clone)]
pub struct Explain {
    pub(crate) plan: Plan,
    pub(crate) pruning: Pruning,
    pub(crate) warnings: Vec<String>,
}

impl Explain {
    /// What the catalog and the batches' metadata keep.
    pub fn pruning(&self) -> &Pruning {
        &self.pruning
    }

    /// The warnings of the expression against the archive's schemas.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The plan and the pruning as JSON.
    pub fn to_json(&self) -> Json {
        json!({
            "plan": self.plan.to_json(),
            "pruning": self.pruning,
            "warnings": self.warnings,
        })
    }
}

impl fmt::Display for Explain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.plan)?;
        let p = &self.pruning;
        writeln!(f, "pruning")?;
        writeln!(
            f,
            "  segments: {} in the catalog, {} pruned by their catalog entry, {} opened{}",
            p.segments,
            p.segments_pruned,
            p.segments - p.segments_pruned - p.segments_damaged,
            if p.segments_damaged > 0 {
                format!(", {} damaged", p.segments_damaged)
            } else {
                String::new()
            }
        )?;
        writeln!(
            f,
            "  batches: {} in the segments opened, {} pruned by their metadata, {} read ({} events)",
            p.batches, p.batches_pruned, p.batches_kept, p.events_kept
        )?;
        writeln!(
            f,
            "  write-ahead log: {} batches, {} pruned",
            p.wal_batches, p.wal_batches_pruned
        )?;
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

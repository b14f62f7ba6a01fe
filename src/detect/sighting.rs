//! The `weir.sighting` event: one match of an indicator or a Sigma rule, stored in the
//! archive like any other event (its format is in [`super`]'s docs).

use crate::batch::{Batch, BatchBuilder};
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::Value;

/// The schema name of sightings.
pub const SIGHTING_SCHEMA: &str = "weir.sighting";

/// The prefix of the schemas weir writes itself, which live matching never matches.
pub const OWN_SCHEMA_PREFIX: &str = "weir.";

/// Nanoseconds since the epoch, now: the time of a sighting whose evidence has none, and
/// the clock indicators expire by.
pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What found a sighting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matcher {
    /// An indicator of a set.
    Intel,
    /// A Sigma rule.
    Sigma,
}

impl Matcher {
    /// Its name in the `matcher` field.
    pub fn name(self) -> &'static str {
        match self {
            Matcher::Intel => "intel",
            Matcher::Sigma => "sigma",
        }
    }
}

/// When a sighting was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As the evidence was committed.
    Live,
    /// Over the archive, after the fact.
    Retro,
}

impl Mode {
    /// Its name in the `mode` field.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Retro => "retro",
        }
    }
}

/// One sighting, before it is an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SightingRow {
    /// The evidence's time (`ts`), or when it was matched if it has none (ns).
    pub ts: i64,
    /// The evidence's event ID.
    pub event_id: u64,
    /// The evidence's schema.
    pub event_type: String,
    /// What matched.
    pub matcher: Matcher,
    /// The set's name, or the rule's `id` (its file's name when it has none).
    pub name: String,
    /// The indicator's value, or the rule's title.
    pub indicator: String,
    /// The indicator's type (`addr`, `domain`, ...), or `sigma`.
    pub indicator_type: String,
    /// The field that matched (indicators only).
    pub field: Option<String>,
    /// The value that matched (indicators only).
    pub value: Option<String>,
    /// The indicator's `meta.source`.
    pub source: Option<String>,
    /// The indicator's description (a rule's: none).
    pub description: Option<String>,
    /// The indicator's confidence.
    pub confidence: Option<u32>,
    /// Live or retro.
    pub mode: Mode,
}

/// The `weir.sighting` schema (see [`super`]'s docs).
pub fn sighting_schema() -> SchemaRef {
    let f = Field::new;
    Schema::new(
        SIGHTING_SCHEMA,
        vec![
            f("ts", Type::Time),
            f("event_id", Type::Count),
            f("event_type", Type::String),
            f("matcher", Type::Enum),
            f("name", Type::String),
            f("indicator", Type::String),
            f("indicator_type", Type::Enum),
            f("field", Type::String),
            f("value", Type::String),
            f("source", Type::String),
            f("description", Type::String),
            f("confidence", Type::Count),
            f("mode", Type::Enum),
        ],
    )
    .into_shared()
}

/// Builds a batch of sightings.
#[derive(Debug)]
pub struct SightingBatch {
    builder: BatchBuilder,
}

impl Default for SightingBatch {
    fn default() -> SightingBatch {
        SightingBatch {
            builder: BatchBuilder::new(sighting_schema()),
        }
    }
}

impl SightingBatch {
    /// Adds one sighting.
    pub fn push(&mut self, s: &SightingRow) {
        let text = |t: &str| Value::String(t.as_bytes().to_vec());
        let opt = |t: &Option<String>| t.as_deref().map_or(Value::Null, text);
        let values = [
            Value::Time(s.ts),
            Value::Count(s.event_id),
            text(&s.event_type),
            text(s.matcher.name()),
            text(&s.name),
            text(&s.indicator),
            text(&s.indicator_type),
            opt(&s.field),
            opt(&s.value),
            opt(&s.source),
            opt(&s.description),
            s.confidence.map_or(Value::Null, |c| Value::Count(c.into())),
            text(s.mode.name()),
        ];
        let mut enc = self.builder.begin_row();
        for v in &values {
            enc.value(v);
        }
        self.builder.finish_row(Some(s.ts));
    }

    /// How many sightings it holds.
    pub fn len(&self) -> usize {
        self.builder.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.builder.is_empty()
    }

    /// The batch of the sightings added since the last call (`None`: none).
    pub fn finish(&mut self) -> Option<Batch> {
        (!self.builder.is_empty()).then(|| self.builder.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sighting_is_a_row_of_the_schema() {
        let mut b = SightingBatch::default();
        assert!(b.finish().is_none());
        b.push(&SightingRow {
            ts: 7,
            event_id: 42,
            event_type: "zeek.conn".into(),
            matcher: Matcher::Intel,
            name: "feed".into(),
            indicator: "10.0.0.1".into(),
            indicator_type: "addr".into(),
            field: Some("id.resp_h".into()),
            value: Some("10.0.0.1".into()),
            source: None,
            description: Some("C2".into()),
            confidence: Some(80),
            mode: Mode::Live,
        });
        let batch = b.finish().expect("one row");
        assert_eq!(batch.schema().name, SIGHTING_SCHEMA);
        assert_eq!(batch.ts_range(), Some((7, 7)));
        let rows = batch.to_values().unwrap();
        assert_eq!(rows[0][1], Value::Count(42));
        assert_eq!(rows[0][9], Value::Null);
        assert_eq!(rows[0][11], Value::Count(80));
        assert_eq!(rows[0][12], Value::String(b"live".to_vec()));
        assert!(b.finish().is_none(), "finish empties it");
    }
}

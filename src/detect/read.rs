//! Reading sightings back as JSON objects, by their own event IDs: what the serve API's
//! `/api/v1/sightings` answers and the webhook posts.
//!
//! A sighting's JSON object is its `weir.sighting` event (see [`super`]'s docs) with its own
//! event ID as `id`, times in RFC 3339 (UTC), unset fields left out:
//!
//! ```json
//! {"id":15203,"ts":"2009-11-19T06:36:32.899950Z","event_id":9841,"event_type":"zeek.conn",
//!  "matcher":"intel","name":"c2","indicator":"192.168.1.103","indicator_type":"addr",
//!  "field":"id.resp_h","value":"192.168.1.103","mode":"live"}
//! ```
//!
//! IDs grow in commit order, so "the sightings after ID N" is what a client that saw N has
//! not seen yet.

use std::collections::VecDeque;

use serde_json::{Map, Value as Json};

use crate::query::{Query, QueryError};
use crate::store::Archive;
use crate::types::Schema;
use crate::value::Value;

use super::sighting::SIGHTING_SCHEMA;

/// One sighting: its own event ID and its JSON object (which holds the ID as `id`).
pub type SightingJson = (u64, Json);

fn query(after: Option<u64>) -> Result<Query, QueryError> {
    let mut text = format!("#type == {}", crate::query::literal::quote(SIGHTING_SCHEMA));
    if let Some(a) = after {
        text.push_str(&format!(" && #id > {a}"));
    }
    Ok(Query::parse(&text)?)
}

/// Whether the archive holds any sighting (else a query naming the schema is refused).
fn has_sightings(archive: &Archive) -> bool {
    crate::query::context::archive_schemas(archive)
        .iter()
        .any(|s| s.name == SIGHTING_SCHEMA)
}

/// The JSON object of one sighting row.
fn object(id: u64, schema: &Schema, values: Vec<Value>) -> Json {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    for (f, v) in schema.fields.iter().zip(values) {
        let j = match v {
            Value::Null => continue,
            Value::Time(ns) => {
                let mut out = Vec::new();
                crate::codec::zeek::scalar::push_rfc3339(&mut out, ns);
                Json::String(String::from_utf8_lossy(&out).into_owned())
            }
            Value::Count(n) | Value::Port(n) => n.into(),
            Value::Int(n) | Value::Interval(n) => n.into(),
            Value::String(s) => Json::String(String::from_utf8_lossy(&s).into_owned()),
            other => Json::String(format!("{other:?}")),
        };
        m.insert(f.name.clone(), j);
    }
    Json::Object(m)
}

/// Calls `each` with the sightings after ID `after` (all: `None`), oldest first, until it
/// returns `false`.
fn each_sighting(
    archive: &Archive,
    after: Option<u64>,
    mut each: impl FnMut(SightingJson) -> bool,
) -> Result<(), QueryError> {
    if !has_sightings(archive) {
        return Ok(());
    }
    let query = query(after)?;
    for batch in query.search(archive)? {
        let batch = batch?;
        let schema = batch.schema().clone();
        let types: Vec<_> = schema.fields.iter().map(|f| f.ty.clone()).collect();
        for (id, row) in batch.ids().into_iter().zip(batch.rows()) {
            let values = crate::value::decode_row(row, &types)?;
            if !each((id, object(id, &schema, values))) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// At most `max` sightings after ID `after`, oldest first.
pub fn sightings_after(
    archive: &Archive,
    after: Option<u64>,
    max: usize,
) -> Result<Vec<SightingJson>, QueryError> {
    let mut out = Vec::new();
    if max == 0 {
        return Ok(out);
    }
    each_sighting(archive, after, |s| {
        out.push(s);
        out.len() < max
    })?;
    Ok(out)
}

/// The newest `n` sightings, newest first.
pub fn newest_sightings(archive: &Archive, n: usize) -> Result<Vec<SightingJson>, QueryError> {
    let mut ring: VecDeque<SightingJson> = VecDeque::with_capacity(n.min(1024));
    if n == 0 {
        return Ok(Vec::new());
    }
    each_sighting(archive, None, |s| {
        if ring.len() == n {
            ring.pop_front();
        }
        ring.push_back(s);
        true
    })?;
    Ok(ring.into_iter().rev().collect())
}

/// The ID of the newest sighting, if any.
pub fn newest_sighting_id(archive: &Archive) -> Result<Option<u64>, QueryError> {
    Ok(newest_sightings(archive, 1)?.first().map(|(id, _)| *id))
}

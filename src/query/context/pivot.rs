//! `pivot`: the events of one type related to the results of a query (see the module docs of
//! [`super`] for the relation).
//!
//! [`Pivot::plan`] runs the query and collects the distinct relation values of all its
//! results in two hash sets (community IDs, and Zeek connection uids), at most `max_keys` in
//! all. [`Pivot::search`] then runs ONE search over the events of the target type, whose
//! pre-filter, for up to [`PREFILTER_KEYS`] values, also names them (`uid in [...] ||
//! conn_uids in [...] || community_id in [...]`, each only where the target type has that
//! field) so that batches whose sketch lacks every value are skipped; each event it lets
//! through is tested by set membership of its own relation values.

use std::collections::HashSet;
use std::ops::ControlFlow;

use crate::store::Archive;
use crate::types::{Schema, SchemaRef, Type};
use crate::value::{DecodeError, ValueRef};

use super::fields::{named, recycle, search_batches, RowFields};
use super::key::quote;
use super::related::{RelatedSearch, Selector};
use super::schemas::archive_schemas;
use super::{ContextError, Related, PREFILTER_KEYS};
use crate::query::memory::{alloc_bytes, table_bytes, MemoryBudget, MemoryLimit, Reservation};
use crate::query::{Query, QueryError, SearchStats};

/// Distinct relation values (uids and community IDs) a pivot collects at most by default
/// (`--max-keys`): about 100 bytes of memory each.
pub const DEFAULT_MAX_PIVOT_KEYS: usize = 1_000_000;

/// The field of a community ID (a string).
const COMMUNITY_ID: &str = "community_id";

/// The field of a Zeek connection uid (a string).
const UID: &str = "uid";

/// The field of `files.log` (before Zeek 5) with the uids of the file's connections (a set of
/// strings).
const CONN_UIDS: &str = "conn_uids";

/// How the names of Zeek schemas begin: between two of them a pivot relates by uid.
const ZEEK_PREFIX: &str = "zeek.";

/// The Zeek schema whose `uid` a community ID leads to when the target has no
/// `community_id` (the first hop of a pivot from a Suricata event to `zeek.http`).
const CONN_SCHEMA: &str = "zeek.conn";

/// How much `pivot` outputs and collects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PivotOptions {
    /// Output events at most (`u64::MAX`: no limit).
    pub max_events: u64,
    /// Distinct relation values of the results at most; more is an error
    /// ([`ContextError::TooManyKeys`]).
    pub max_keys: usize,
    /// The memory budget of the values collected (their sets, as allocated; see
    /// [`crate::query::memory`]): past it, the pivot fails naming it.
    pub memory: MemoryLimit,
}

impl Default for PivotOptions {
    fn default() -> PivotOptions {
        PivotOptions {
            max_events: u64::MAX,
            max_keys: DEFAULT_MAX_PIVOT_KEYS,
            memory: MemoryLimit::default(),
        }
    }
}

/// The relation fields of a schema: (community_id, uid, conn_uids) field indices, each the
/// first field of the right type that the name names.
#[derive(Debug, Clone, Copy, Default)]
struct RelationFields {
    community_id: Option<usize>,
    uid: Option<usize>,
    conn_uids: Option<usize>,
}

impl RelationFields {
    fn of(schema: &Schema) -> RelationFields {
        let string = |name: &str| {
            named(schema, name)
                .into_iter()
                .find(|&i| schema.fields[i].ty.is_stringy())
        };
        let strings = |name: &str| {
            named(schema, name).into_iter().find(|&i| {
                let ty = &schema.fields[i].ty;
                ty.is_container() && ty.element().is_some_and(Type::is_stringy)
            })
        };
        RelationFields {
            community_id: string(COMMUNITY_ID),
            uid: string(UID),
            conn_uids: strings(CONN_UIDS),
        }
    }

    /// Whether it has a uid field (`uid` or `conn_uids`).
    fn has_uid(&self) -> bool {
        self.uid.is_some() || self.conn_uids.is_some()
    }

    fn reader(&self, schema: &Schema) -> RowFields {
        let wanted: Vec<usize> = [self.community_id, self.uid, self.conn_uids]
            .into_iter()
            .flatten()
            .collect();
        RowFields::new(schema, &wanted)
    }

    /// The relation fields of `schema` and their reader.
    fn with_reader(schema: &SchemaRef) -> (RelationFields, RowFields) {
        let rel = RelationFields::of(schema);
        (rel, rel.reader(schema))
    }
}

/// The relation values of the results of a query over one target type; see
/// [`Pivot::search`].
#[derive(Debug)]
pub struct Pivot {
    target: String,
    max_events: u64,
    community_ids: HashSet<Vec<u8>>,
    uids: HashSet<Vec<u8>>,
    results: u64,
    target_known: bool,
    prefilter: Query,
    errors: Vec<QueryError>,
    /// What the sets hold, charged to the pivot's budget until it is dropped.
    _memory: Reservation,
}

/// Adds `key` to `set`, counting what a new one allocates in `heap`.
fn insert(set: &mut HashSet<Vec<u8>>, key: &[u8], heap: &mut usize) {
    if !set.contains(key) {
        let key = key.to_vec();
        *heap += alloc_bytes(key.capacity());
        set.insert(key);
    }
}

impl Pivot {
    /// Runs `query` over `archive` and collects the relation values of its results for the
    /// type `target` (a schema name, `zeek.http`). A damaged segment or batch met by the
    /// query is kept in [`Pivot::errors`] and the query goes on.
    pub fn plan(
        archive: &Archive,
        target: &str,
        query: &Query,
        options: PivotOptions,
    ) -> Result<Pivot, ContextError> {
        let schemas = archive_schemas(archive);
        let targets: Vec<&SchemaRef> = schemas.iter().filter(|s| s.name == target).collect();
        let target_rel: Vec<RelationFields> =
            targets.iter().map(|s| RelationFields::of(s)).collect();
        let target_has_cid = target_rel.iter().any(|r| r.community_id.is_some());
        let target_has_uid = target_rel.iter().any(RelationFields::has_uid);
        let target_zeek = target.starts_with(ZEEK_PREFIX);
        let mut community_ids: HashSet<Vec<u8>> = HashSet::new();
        let mut uids: HashSet<Vec<u8>> = HashSet::new();
        // Community IDs to reach a target without them through the conn events' uids.
        let mut hop: HashSet<Vec<u8>> = HashSet::new();
        let mut errors = Vec::new();
        let mut results = 0u64;
        let memory = MemoryBudget::new(options.memory).reserve("pivot");
        let mut keys_heap = 0usize;
        let charge = |sets: [&HashSet<Vec<u8>>; 3], heap: usize| -> Result<(), ContextError> {
            if sets.iter().map(|s| s.len()).sum::<usize>() > options.max_keys {
                return Err(ContextError::TooManyKeys {
                    limit: options.max_keys,
                });
            }
            let key = std::mem::size_of::<Vec<u8>>();
            let tables: usize = sets.iter().map(|s| table_bytes(s.capacity(), key)).sum();
            memory.resize(tables + heap)?;
            Ok(())
        };
        search_batches(
            archive,
            query,
            &mut errors,
            RelationFields::with_reader,
            |hits, (rel, reader)| {
                let schema = hits.schema();
                // VAST's rule: by uid between two Zeek types that have one.
                let zeek_pair = target_zeek
                    && schema.name.starts_with(ZEEK_PREFIX)
                    && rel.has_uid()
                    && target_has_uid;
                let mut values = Vec::new();
                for row in hits.rows() {
                    results += 1;
                    reader.read(row, &mut values).map_err(QueryError::from)?;
                    let at = |f: Option<usize>| values.get(reader.slot(f?)?);
                    // Else by community ID: the target's own, or its conn's uid (two hops).
                    let cid = match at(rel.community_id) {
                        Some(ValueRef::String(c)) if !zeek_pair => Some(*c),
                        _ => None,
                    };
                    match cid {
                        Some(c) if target_has_cid => insert(&mut community_ids, c, &mut keys_heap),
                        Some(c) if target_has_uid => insert(&mut hop, c, &mut keys_heap),
                        _ => {
                            if let Some(ValueRef::String(u)) = at(rel.uid) {
                                insert(&mut uids, u, &mut keys_heap);
                            }
                            if let Some(ValueRef::List(items)) = at(rel.conn_uids) {
                                for item in items {
                                    if let ValueRef::String(u) = item {
                                        insert(&mut uids, u, &mut keys_heap);
                                    }
                                }
                            }
                        }
                    }
                    charge([&community_ids, &uids, &hop], keys_heap)?;
                }
                Ok(ControlFlow::Continue(()))
            },
        )?;
        if !hop.is_empty() {
            let before = errors.len();
            for u in conn_uids_of(archive, &schemas, &hop, &mut errors)? {
                insert(&mut uids, &u, &mut keys_heap);
                charge([&community_ids, &uids, &hop], keys_heap)?;
            }
            tracing::debug!(
                community_ids = hop.len(),
                uids = uids.len(),
                damaged = errors.len() - before,
                "pivot through {CONN_SCHEMA}"
            );
        }
        let prefilter = prefilter(target, &targets, &community_ids, &uids)?;
        Ok(Pivot {
            target: target.to_string(),
            max_events: options.max_events,
            community_ids,
            uids,
            results,
            target_known: !targets.is_empty(),
            prefilter,
            errors,
            _memory: memory,
        })
    }

    /// The results of the query.
    pub fn results(&self) -> u64 {
        self.results
    }

    /// The distinct relation values of the results (community IDs and uids).
    pub fn keys(&self) -> usize {
        self.community_ids.len() + self.uids.len()
    }

    /// Whether the archive has events of the target type at all.
    pub fn target_known(&self) -> bool {
        self.target_known
    }

    /// Damaged segments or batches the query met (skipped).
    pub fn errors(&self) -> &[QueryError] {
        &self.errors
    }

    /// The pre-filter of the second search.
    pub fn prefilter(&self) -> &Query {
        &self.prefilter
    }

    /// The related events of the target type: each once, in ID order, at most `max_events`.
    pub fn search<'a>(&'a self, archive: &'a Archive) -> Result<PivotSearch<'a>, QueryError> {
        let selector = Members {
            pivot: self,
            current: None,
            values: Vec::new(),
            cache: Vec::new(),
        };
        Ok(PivotSearch(RelatedSearch::new(
            archive,
            &self.prefilter,
            selector,
            self.max_events,
        )?))
    }
}

/// The related events of a [`Pivot`], in ID order: see [`Pivot::search`]. A damaged segment
/// or batch yields one error and the search goes on.
#[derive(Debug)]
pub struct PivotSearch<'a>(RelatedSearch<'a, Members<'a>>);

impl PivotSearch<'_> {
    /// What the search has touched so far.
    pub fn stats(&self) -> &SearchStats {
        self.0.stats()
    }
}

impl Iterator for PivotSearch<'_> {
    type Item = Result<Related, QueryError>;
    fn next(&mut self) -> Option<Result<Related, QueryError>> {
        self.0.next()
    }
}

/// The uids of the `zeek.conn` events whose community ID is one of `cids`: one search, which
/// for up to [`PREFILTER_KEYS`] values also names them (`community_id in [...]`), so that
/// batches whose sketch has none of them are skipped. Damaged batches go to `errors`.
fn conn_uids_of(
    archive: &Archive,
    schemas: &[SchemaRef],
    cids: &HashSet<Vec<u8>>,
    errors: &mut Vec<QueryError>,
) -> Result<Vec<Vec<u8>>, ContextError> {
    let conns = schemas.iter().filter(|s| {
        let rel = RelationFields::of(s);
        s.name == CONN_SCHEMA && rel.community_id.is_some() && rel.uid.is_some()
    });
    if conns.count() == 0 {
        return Ok(Vec::new());
    }
    let mut text = format!("#type == {}", quote(CONN_SCHEMA.as_bytes()));
    if cids.len() <= PREFILTER_KEYS {
        let mut v: Vec<&Vec<u8>> = cids.iter().collect();
        v.sort_unstable();
        let list = v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ");
        text = format!("{text} && {COMMUNITY_ID} in [{list}]");
    }
    let query = Query::parse(&text).map_err(QueryError::from)?;
    let mut out = HashSet::new();
    search_batches(
        archive,
        &query,
        errors,
        RelationFields::with_reader,
        |hits, (rel, reader)| {
            let mut values = Vec::new();
            for row in hits.rows() {
                reader.read(row, &mut values).map_err(QueryError::from)?;
                let at = |f: Option<usize>| values.get(reader.slot(f?)?);
                if let (Some(ValueRef::String(c)), Some(ValueRef::String(u))) =
                    (at(rel.community_id), at(rel.uid))
                {
                    if cids.contains(*c) && !out.contains(*u) {
                        out.insert(u.to_vec());
                    }
                }
            }
            Ok(ControlFlow::Continue(()))
        },
    )?;
    Ok(out.into_iter().collect())
}

/// `#type == "T"`, and for a few values, `(uid in [...] || ...)` over the relation fields that
/// some schema of the target type has.
fn prefilter(
    target: &str,
    targets: &[&SchemaRef],
    community_ids: &HashSet<Vec<u8>>,
    uids: &HashSet<Vec<u8>>,
) -> Result<Query, ContextError> {
    let mut text = format!("#type == {}", quote(target.as_bytes()));
    if community_ids.len() + uids.len() <= PREFILTER_KEYS {
        let has = |f: fn(&RelationFields) -> Option<usize>| {
            targets.iter().any(|s| f(&RelationFields::of(s)).is_some())
        };
        let list = |set: &HashSet<Vec<u8>>| {
            let mut v: Vec<&Vec<u8>> = set.iter().collect();
            v.sort_unstable();
            v.iter().map(|s| quote(s)).collect::<Vec<_>>().join(", ")
        };
        let mut any = Vec::new();
        if !community_ids.is_empty() && has(|r| r.community_id) {
            any.push(format!("{COMMUNITY_ID} in [{}]", list(community_ids)));
        }
        if !uids.is_empty() && has(|r| r.uid) {
            any.push(format!("{UID} in [{}]", list(uids)));
        }
        if !uids.is_empty() && has(|r| r.conn_uids) {
            any.push(format!("{CONN_UIDS} in [{}]", list(uids)));
        }
        if any.is_empty() {
            // Nothing can relate: a query that matches nothing, decided per schema.
            any.push(format!("#type != {}", quote(target.as_bytes())));
        }
        text = format!("{text} && ({})", any.join(" || "));
    }
    Ok(Query::parse(&text).map_err(QueryError::from)?)
}

/// The selector of the second search: membership of each event's relation values.
#[derive(Debug)]
struct Members<'a> {
    pivot: &'a Pivot,
    current: Option<usize>,
    values: Vec<ValueRef<'static>>,
    cache: Vec<(SchemaRef, RelationFields, RowFields)>,
}

impl Selector for Members<'_> {
    fn prepare(&mut self, schema: &SchemaRef) {
        let i = match self
            .cache
            .iter()
            .position(|(s, ..)| std::sync::Arc::ptr_eq(s, schema))
            .or_else(|| self.cache.iter().position(|(s, ..)| **s == **schema))
        {
            Some(i) => i,
            None => {
                let rel = if schema.name == self.pivot.target {
                    RelationFields::of(schema)
                } else {
                    RelationFields::default()
                };
                self.cache.push((schema.clone(), rel, rel.reader(schema)));
                self.cache.len() - 1
            }
        };
        self.current = Some(i);
    }

    fn select(&mut self, row: &[u8]) -> Result<bool, DecodeError> {
        let Some((_, rel, reader)) = self.current.and_then(|i| self.cache.get(i)) else {
            return Ok(false);
        };
        let p = self.pivot;
        let mut values: Vec<ValueRef<'_>> = std::mem::take(&mut self.values);
        reader.read(row, &mut values)?;
        let at = |f: Option<usize>| values.get(reader.slot(f?)?);
        let member = |v: Option<&ValueRef<'_>>, set: &HashSet<Vec<u8>>| match v {
            Some(ValueRef::String(s)) => set.contains(*s),
            Some(ValueRef::List(items)) => items
                .iter()
                .any(|x| matches!(x, ValueRef::String(s) if set.contains(*s))),
            _ => false,
        };
        let related = member(at(rel.community_id), &p.community_ids)
            || member(at(rel.uid), &p.uids)
            || member(at(rel.conn_uids), &p.uids);
        self.values = recycle(values);
        Ok(related)
    }

    fn exhausted(&self) -> bool {
        self.pivot.community_ids.is_empty() && self.pivot.uids.is_empty()
    }
}

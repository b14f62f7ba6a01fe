//! `explore`: the events around each result of a query (see the module docs of
//! [`super`] for the semantics).
//!
//! [`Explore::plan`] runs the query, taking its first `max_events_query` results in ID order,
//! and keeps of each its `ts` and its `--by` value (its *origin*), grouped by that value and
//! sorted by time. [`Explore::search`] then runs one search whose pre-filter is the union of
//! all contexts as the language can state it cheaply (the time range from the earliest window
//! start to the latest window end, the `--for` types, and for up to [`PREFILTER_KEYS`] string
//! or address values `FIELD in [...]`), so that segments and batches outside it are pruned by
//! their metadata; each event it lets through is tested exactly against the windows of the
//! origins with an equal `--by` value (a hash lookup, then a binary search by time), counted
//! for each origin whose context still has room, and output when at least one had.

use std::collections::HashMap;
use std::ops::ControlFlow;

use crate::store::Archive;
use crate::types::{SchemaRef, Type};
use crate::value::{DecodeError, ValueRef};

use super::fields::{named, recycle, search_batches, RowFields};
use super::key::{offered, Key};
use super::related::{RelatedSearch, Selector};
use super::schemas::archive_schemas;
use super::{ContextError, Related, PREFILTER_KEYS};
use crate::query::{Query, QueryError, SearchStats};

/// Results of the query taken by default (`--max-events-query`), as VAST.
pub const DEFAULT_MAX_EVENTS_QUERY: u64 = 100;

/// Context events per result by default (`--max-events-context`), as VAST.
pub const DEFAULT_MAX_EVENTS_CONTEXT: u64 = 100;

/// Nanoseconds per second.
const NS: i128 = 1_000_000_000;

/// The largest whole second a time literal of the pre-filter names (about 2255-03-14): a
/// window end past it (or before its negative) leaves that side of the range open.
const MAX_LITERAL_SECONDS: i128 = 9_000_000_000;

/// What `explore` looks for around each result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExploreOptions {
    /// How long before a result's `ts` its context starts, in nanoseconds (≥ 0).
    pub before: Option<i64>,
    /// How long after a result's `ts` its context ends, in nanoseconds (≥ 0). With neither
    /// `before` nor `after` the context has no time bound (then `by` is required); with one of
    /// them, the other is 0.
    pub after: Option<i64>,
    /// A field extractor: context events have a field it names with a value equal to the
    /// result's (the first field it names in the result's schema).
    pub by: Option<String>,
    /// Schema names context events must have (none: any).
    pub types: Vec<String>,
    /// Output events at most, in all (`u64::MAX`: no limit).
    pub max_events: u64,
    /// Results of the query taken, the first ones in ID order.
    pub max_events_query: u64,
    /// Context events per result at most, the first ones in ID order.
    pub max_events_context: u64,
}

impl Default for ExploreOptions {
    fn default() -> ExploreOptions {
        ExploreOptions {
            before: None,
            after: None,
            by: None,
            types: Vec::new(),
            max_events: u64::MAX,
            max_events_query: DEFAULT_MAX_EVENTS_QUERY,
            max_events_context: DEFAULT_MAX_EVENTS_CONTEXT,
        }
    }
}

/// The time window of every context relative to its result's `ts`: `[ts - before, ts +
/// after]`, both ends included.
#[derive(Debug, Clone, Copy)]
struct Window {
    before: i128,
    after: i128,
}

/// The results of the query, as contexts to fill; see [`Explore::search`].
#[derive(Debug)]
pub struct Explore {
    options: ExploreOptions,
    window: Option<Window>,
    /// With `--by`: the origins (results with a context) by `--by` value, each group sorted
    /// by `ts`: `(ts, origin index)`.
    groups: HashMap<Key, Vec<(i64, usize)>>,
    /// Without `--by`: every origin, sorted by `ts`.
    all: Vec<(i64, usize)>,
    origins: usize,
    results: u64,
    prefilter: Query,
    errors: Vec<QueryError>,
    missing_types: Vec<String>,
}

impl Explore {
    /// Runs `query` over `archive` and prepares the contexts of its first
    /// `options.max_events_query` results. Options that VAST refused are refused here too
    /// ([`ContextError::Options`]): no `before`, `after` or `by`; a window of zero on both
    /// sides without `by`; a negative duration. A damaged segment or batch met by the query is
    /// kept in [`Explore::errors`] and the query goes on.
    pub fn plan(
        archive: &Archive,
        query: &Query,
        options: ExploreOptions,
    ) -> Result<Explore, ContextError> {
        let window = check(&options)?;
        let mut origins: Vec<(Option<Key>, i64)> = Vec::new();
        let mut errors = Vec::new();
        let mut results = 0u64;
        if options.max_events_query > 0 {
            let fields = |schema: &SchemaRef| origin_fields(schema, options.by.as_deref());
            search_batches(archive, query, &mut errors, fields, |hits, origin| {
                let mut values = Vec::new();
                for row in hits.rows() {
                    results += 1;
                    if let Some(o) = origin {
                        o.fields.read(row, &mut values).map_err(QueryError::from)?;
                        let at = |slot: usize| values.get(o.fields.slot(slot)?);
                        if let Some(&ValueRef::Time(t)) = at(o.ts) {
                            match o.by.map(|b| at(b).and_then(Key::of)) {
                                // A result without a `--by` value has no context (as VAST).
                                Some(None) => {}
                                Some(Some(k)) => origins.push((Some(k), t)),
                                None => origins.push((None, t)),
                            }
                        }
                    }
                    if results == options.max_events_query {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Ok(ControlFlow::Continue(()))
            })?;
        }
        let schemas = if origins.is_empty() && options.types.is_empty() {
            Vec::new()
        } else {
            archive_schemas(archive)
        };
        let missing_types = options
            .types
            .iter()
            .filter(|t| !schemas.iter().any(|s| s.name == **t))
            .cloned()
            .collect();
        let prefilter = prefilter(&options, window, &origins, &schemas)?;
        let mut groups: HashMap<Key, Vec<(i64, usize)>> = HashMap::new();
        let mut all = Vec::new();
        let count = origins.len();
        for (i, (k, t)) in origins.into_iter().enumerate() {
            match k {
                Some(k) => groups.entry(k).or_default().push((t, i)),
                None => all.push((t, i)),
            }
        }
        for g in groups.values_mut() {
            g.sort_unstable();
        }
        all.sort_unstable();
        Ok(Explore {
            options,
            window,
            groups,
            all,
            origins: count,
            results,
            prefilter,
            errors,
            missing_types,
        })
    }

    /// The `--for` types the archive has no events of.
    pub fn missing_types(&self) -> &[String] {
        &self.missing_types
    }

    /// The results taken from the query (at most `max_events_query`).
    pub fn results(&self) -> u64 {
        self.results
    }

    /// Of those, the ones with a context: with a `ts` and, with `by`, a value of that field.
    pub fn origins(&self) -> usize {
        self.origins
    }

    /// Damaged segments or batches the query met (skipped).
    pub fn errors(&self) -> &[QueryError] {
        &self.errors
    }

    /// The pre-filter of the second search (the union of the contexts, as far as it tells).
    pub fn prefilter(&self) -> &Query {
        &self.prefilter
    }

    /// The context events: each once, in ID order, at most `max_events`.
    pub fn search<'a>(&'a self, archive: &'a Archive) -> Result<ExploreSearch<'a>, QueryError> {
        let selector = Contexts {
            explore: self,
            counts: vec![0; self.origins],
            full: 0,
            current: None,
            cache: Vec::new(),
            values: Vec::new(),
            keys: Vec::new(),
        };
        Ok(ExploreSearch(RelatedSearch::new(
            archive,
            &self.prefilter,
            selector,
            self.options.max_events,
        )?))
    }
}

/// The context events of an [`Explore`], in ID order: see [`Explore::search`]. A damaged
/// segment or batch yields one error and the search goes on.
#[derive(Debug)]
pub struct ExploreSearch<'a>(RelatedSearch<'a, Contexts<'a>>);

impl ExploreSearch<'_> {
    /// What the search has touched so far.
    pub fn stats(&self) -> &SearchStats {
        self.0.stats()
    }
}

impl Iterator for ExploreSearch<'_> {
    type Item = Result<Related, QueryError>;
    fn next(&mut self) -> Option<Result<Related, QueryError>> {
        self.0.next()
    }
}

/// The window, from the options; refuses what VAST refused.
fn check(o: &ExploreOptions) -> Result<Option<Window>, ContextError> {
    if o.before.is_some_and(|d| d < 0) || o.after.is_some_and(|d| d < 0) {
        return Err(ContextError::Options(
            "--before, --after and --context take a duration of 0 or more".into(),
        ));
    }
    if o.before.is_none() && o.after.is_none() && o.by.is_none() {
        return Err(ContextError::Options(
            "explore needs at least one of --before, --after, --context or --by".into(),
        ));
    }
    if let Some(by) = &o.by {
        let ok = !by.is_empty()
            && by
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Err(ContextError::Options(format!(
                "--by takes a field name (such as id.orig_h), not {by:?}"
            )));
        }
    }
    let window = match (o.before, o.after) {
        (None, None) => None,
        (b, a) => Some(Window {
            before: i128::from(b.unwrap_or(0)),
            after: i128::from(a.unwrap_or(0)),
        }),
    };
    if o.by.is_none() && window.is_some_and(|w| w.before == 0 && w.after == 0) {
        return Err(ContextError::Options(
            "without --by, --before or --after must be more than 0".into(),
        ));
    }
    Ok(window)
}

/// The fields of a result that make its context: its `ts` and its `--by` value.
#[derive(Debug)]
struct OriginFields {
    fields: RowFields,
    ts: usize,
    /// The first field `--by` names.
    by: Option<usize>,
}

/// The reader of a result's `ts` and `--by` field (the first it names), when its schema has
/// both (a `--by` it does not name: no context, as VAST).
fn origin_fields(schema: &SchemaRef, by: Option<&str>) -> Option<OriginFields> {
    let ts = schema.ts_index()?;
    let by = match by {
        None => None,
        Some(name) => Some(*named(schema, name).first()?),
    };
    let wanted: Vec<usize> = std::iter::once(ts).chain(by).collect();
    Some(OriginFields {
        fields: RowFields::new(schema, &wanted),
        ts,
        by,
    })
}

/// The pre-filter: the union time range of the windows, the types, and the `--by` values
/// when they are few strings or addresses and every field `--by` names is of their kind (so
/// that the predicate is well-typed wherever it applies).
fn prefilter(
    o: &ExploreOptions,
    window: Option<Window>,
    origins: &[(Option<Key>, i64)],
    schemas: &[SchemaRef],
) -> Result<Query, ContextError> {
    let mut parts: Vec<String> = Vec::new();
    if let (Some(w), Some(lo), Some(hi)) = (
        window,
        origins.iter().map(|o| o.1).min(),
        origins.iter().map(|o| o.1).max(),
    ) {
        let start = (i128::from(lo) - w.before).div_euclid(NS);
        let end = -(-(i128::from(hi) + w.after)).div_euclid(NS);
        if start.abs() < MAX_LITERAL_SECONDS {
            parts.push(format!("#timestamp >= @{start}"));
        }
        if end.abs() < MAX_LITERAL_SECONDS {
            parts.push(format!("#timestamp <= @{end}"));
        }
    }
    if !o.types.is_empty() {
        let names: Vec<String> = o
            .types
            .iter()
            .map(|t| super::key::quote(t.as_bytes()))
            .collect();
        parts.push(format!("#type in [{}]", names.join(", ")));
    }
    if let Some(by) = &o.by {
        if let Some(list) = by_literals(by, origins, schemas) {
            parts.push(format!("{by} in [{list}]"));
        }
    }
    if parts.is_empty() || origins.is_empty() {
        return Ok(Query::all());
    }
    Ok(Query::parse(&parts.join(" && ")).map_err(QueryError::from)?)
}

/// `v1, v2, ...` for `FIELD in [...]`: `None` when the values are many, not all strings or
/// all addresses, or some field `by` names is of another type.
fn by_literals(by: &str, origins: &[(Option<Key>, i64)], schemas: &[SchemaRef]) -> Option<String> {
    let mut keys: Vec<&Key> = origins.iter().filter_map(|o| o.0.as_ref()).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() || keys.len() > PREFILTER_KEYS {
        return None;
    }
    let addr = matches!(keys[0], Key::Addr(_));
    let fits = |ty: &Type| {
        let ty = ty.element().unwrap_or(ty);
        if addr {
            *ty == Type::Addr
        } else {
            ty.is_stringy()
        }
    };
    for s in schemas {
        for i in named(s, by) {
            if !fits(&s.fields[i].ty) {
                return None;
            }
        }
    }
    let mut out = Vec::new();
    for k in keys {
        if matches!(k, Key::Addr(_)) != addr {
            return None;
        }
        out.extend(k.literals()?);
    }
    Some(out.join(", "))
}

/// What a schema's events offer to the contexts.
#[derive(Debug)]
struct Plan {
    /// Not of a `--for` type, or without a `--by` field or a `ts` where they are needed: no
    /// event of it is in any context.
    never: bool,
    fields: RowFields,
    ts: Option<usize>,
    by: Vec<usize>,
}

/// The selector of the second search: each event's contexts, with their counts.
#[derive(Debug)]
struct Contexts<'a> {
    explore: &'a Explore,
    /// Context events taken per origin.
    counts: Vec<u64>,
    /// Origins whose context is full.
    full: usize,
    current: Option<usize>,
    cache: Vec<(SchemaRef, Plan)>,
    values: Vec<ValueRef<'static>>,
    keys: Vec<Key>,
}

impl Contexts<'_> {
    fn plan(&self, schema: &SchemaRef) -> Plan {
        let o = &self.explore.options;
        let typed = o.types.is_empty() || o.types.iter().any(|t| *t == schema.name);
        let ts = schema.ts_index();
        let by =
            o.by.as_deref()
                .map(|b| named(schema, b))
                .unwrap_or_default();
        let never = !typed
            || (self.explore.window.is_some() && ts.is_none())
            || (o.by.is_some() && by.is_empty());
        let wanted: Vec<usize> = ts.into_iter().chain(by.iter().copied()).collect();
        Plan {
            never,
            fields: RowFields::new(schema, &wanted),
            ts,
            by,
        }
    }
}

impl Selector for Contexts<'_> {
    fn prepare(&mut self, schema: &SchemaRef) {
        let i = match self
            .cache
            .iter()
            .position(|(s, _)| std::sync::Arc::ptr_eq(s, schema))
            .or_else(|| self.cache.iter().position(|(s, _)| **s == **schema))
        {
            Some(i) => i,
            None => {
                let plan = self.plan(schema);
                self.cache.push((schema.clone(), plan));
                self.cache.len() - 1
            }
        };
        self.current = Some(i);
    }

    fn select(&mut self, row: &[u8]) -> Result<bool, DecodeError> {
        let Some((_, plan)) = self.current.and_then(|i| self.cache.get(i)) else {
            return Ok(false);
        };
        if plan.never {
            return Ok(false);
        }
        let mut values: Vec<ValueRef<'_>> = std::mem::take(&mut self.values);
        plan.fields.read(row, &mut values)?;
        let ts = match plan.ts.and_then(|t| values.get(plan.fields.slot(t)?)) {
            Some(ValueRef::Time(t)) => Some(i128::from(*t)),
            _ => None,
        };
        let window = self.explore.window;
        if window.is_some() && ts.is_none() {
            self.values = recycle(values);
            return Ok(false);
        }
        self.keys.clear();
        for &f in &plan.by {
            if let Some(v) = plan.fields.slot(f).and_then(|s| values.get(s)) {
                offered(v, &mut self.keys);
            }
        }
        self.values = recycle(values);
        self.keys.sort_unstable();
        self.keys.dedup();
        let cap = self.explore.options.max_events_context;
        let mut taken = false;
        let mut visit = |group: &[(i64, usize)], counts: &mut [u64], full: &mut usize| {
            let range = match (window, ts) {
                (Some(w), Some(t)) => {
                    // Origins whose window holds t: origin ts in [t - after, t + before].
                    let lo = group.partition_point(|(o, _)| i128::from(*o) < t - w.after);
                    let hi = group.partition_point(|(o, _)| i128::from(*o) <= t + w.before);
                    lo..hi.max(lo)
                }
                _ => 0..group.len(),
            };
            for &(_, i) in &group[range] {
                let Some(c) = counts.get_mut(i) else { continue };
                if *c < cap {
                    *c += 1;
                    taken = true;
                    if *c == cap {
                        *full += 1;
                    }
                }
            }
        };
        let explore = self.explore;
        if explore.options.by.is_none() {
            visit(&explore.all, &mut self.counts, &mut self.full);
        } else {
            for k in &self.keys {
                if let Some(g) = explore.groups.get(k) {
                    visit(g, &mut self.counts, &mut self.full);
                }
            }
        }
        Ok(taken)
    }

    fn exhausted(&self) -> bool {
        self.full >= self.explore.origins
    }
}

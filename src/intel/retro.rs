//! Retro matching: a set against the whole archive (or its recent part) in ONE search.
//!
//! The search's expression is a disjunction of `:addr in [a, b, ...]` and `:addr in NET` for
//! the addresses and subnets (pruned by the batches' sketches), and, per schema that has
//! another field of the match table, `#type == "S" && (F ... || ...)`: domains as one
//! case-insensitive pattern of the names and their subdomains, URLs by their path (`uri in
//! [...]`), hashes and other strings as `in [...]`. Past [`PREFILTER_VALUES`] values of one
//! kind in a list ([`PREFILTER_NAMES`] in a pattern, [`PREFILTER_SUBNETS`] subnets), and for
//! containers, a field is only required to be set (the search still prunes by schema and time). The rows the search lets through are
//! then tested exactly by the [`Matcher`]'s hash tables; the pre-filter only ever lets more
//! through, so the matches are the matcher's alone.

use crate::query::context::archive_schemas;
use crate::query::literal::quote;
use crate::query::ops::physical::ScanSpec;
use crate::query::{Query, QueryError, Search, SearchStats};
use crate::store::Archive;
use crate::types::{Schema, SchemaRef};

use super::indicator::{Indicator, IndicatorType};
use super::matcher::{Check, Hit, Matcher, SchemaPlan};

/// Values of one kind a pre-filter names in an `in [...]` list at most (more: the field need
/// only be set). A named list costs the search one hash lookup per row
/// ([`crate::query::ListItems`]) and lets through only the rows that hold a value of it; the
/// sketches are probed for lists of at most 128 items (`LIST_PROBE_MAX` in `query/prune.rs`).
/// Until lists of more than 128 items stopped being probed item by item, this was 4096:
/// probing cost more than it saved. Measured on 10 M generated conn events (release builds,
/// medians of 3): 100,000 addresses took 2.40 s and 740 MiB with the field only required to
/// be set (every row through the matcher), 0.90 s and 69 MiB named, a full scan (`weir count
/// 'uid ~ /.*Qx.*/'`) 0.60 s.
pub const PREFILTER_VALUES: usize = 1 << 20;

/// Names (domains, email addresses) a pre-filter puts into one pattern at most.
pub const PREFILTER_NAMES: usize = 256;

/// Subnets a pre-filter names at most (each is one `:addr in NET`).
pub const PREFILTER_SUBNETS: usize = 16;

/// Whether the pre-filter names the set's addresses and subnets (`:addr in [...] || :addr in
/// NET`) rather than requiring each address field to be set.
fn addrs_named(m: &Matcher) -> bool {
    m.values(IndicatorType::Addr).len() <= PREFILTER_VALUES
        && m.values(IndicatorType::Subnet).len() <= PREFILTER_SUBNETS
}

/// One match of a retro search: an event, the indicator and the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The event's ID.
    pub id: u64,
    /// Its schema.
    pub schema: String,
    /// Its time (`ts`, ns since the epoch), if it has one.
    pub time: Option<i64>,
    /// The field that matched.
    pub field: String,
    /// The value that matched.
    pub value: String,
    /// The indicator.
    pub indicator: Indicator,
}

/// `F in [a, b]` of `values` as `quoted` writes them, or `F != nil` past [`PREFILTER_VALUES`]
/// (and for containers). The list is only made when it is named (a set of a million values
/// is not copied to be counted).
fn in_list<'a>(
    field: &str,
    container: bool,
    values: impl ExactSizeIterator<Item = &'a str>,
    quoted: impl Fn(&'a str) -> String,
) -> String {
    if container || values.len() > PREFILTER_VALUES {
        return format!("{field} != nil");
    }
    let list: Vec<String> = values.map(quoted).collect();
    format!("{field} in [{}]", list.join(", "))
}

/// The condition on one schema's fields that every match in them satisfies, but for the
/// scalar address fields that the global `:addr` disjunct covers (empty: nothing left).
fn schema_condition(m: &Matcher, schema: &Schema, plan: &SchemaPlan) -> String {
    let mut any: Vec<String> = Vec::new();
    for &(f, container, check) in &plan.checks {
        let name = &schema.fields[f].name;
        match check {
            Check::Addr => {
                // Scalar fields are covered by the global `:addr` disjunct unless the set
                // has too many values for it.
                if container || !addrs_named(m) {
                    any.push(format!("{name} != nil"));
                }
            }
            Check::Domain => {
                if container || m.values(IndicatorType::Domain).len() > PREFILTER_NAMES {
                    any.push(format!("{name} != nil"));
                } else {
                    let names: Vec<String> =
                        m.values(IndicatorType::Domain).map(regex::escape).collect();
                    any.push(format!(
                        "{name} ~ /(?i)(?:.*\\.)?(?:{})\\.?/",
                        names.join("|")
                    ));
                }
            }
            Check::Url { .. } => {
                // The distinct paths, borrowed from the set until they are named.
                let mut paths: Vec<&str> = m
                    .values(IndicatorType::Url)
                    .map(|u| u.find('/').map_or("", |i| &u[i..]))
                    .collect();
                paths.sort_unstable();
                paths.dedup();
                any.push(in_list(name, container, paths.into_iter(), quote));
            }
            Check::Exact(IndicatorType::Email) => {
                if container || m.values(IndicatorType::Email).len() > PREFILTER_NAMES {
                    any.push(format!("{name} != nil"));
                } else {
                    let names: Vec<String> =
                        m.values(IndicatorType::Email).map(regex::escape).collect();
                    any.push(format!("{name} ~ /(?i)(?:{})/", names.join("|")));
                }
            }
            Check::Exact(kind) => any.push(in_list(name, container, m.values(kind), quote)),
        }
    }
    any.dedup();
    if any.is_empty() {
        return String::new();
    }
    format!("#type == {} && ({})", quote(&schema.name), any.join(" || "))
}

/// The pre-filter of the set over the archive's schemas; `None` when no schema can match.
/// `since`: only events at or after this time (ns since the epoch).
pub fn prefilter(m: &Matcher, schemas: &[SchemaRef], since: Option<i64>) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut scalar_addrs = false;
    for s in schemas {
        let plan = m.plan(s);
        scalar_addrs |= plan
            .checks
            .iter()
            .any(|(_, container, c)| *c == Check::Addr && !container);
        let c = schema_condition(m, s, &plan);
        if !c.is_empty() && !parts.contains(&c) {
            parts.push(c);
        }
    }
    if scalar_addrs && addrs_named(m) {
        let addrs: Vec<&str> = m.values(IndicatorType::Addr).collect();
        if !addrs.is_empty() {
            parts.push(format!(":addr in [{}]", addrs.join(", ")));
        }
        parts.extend(
            m.values(IndicatorType::Subnet)
                .map(|n| format!(":addr in {n}")),
        );
    }
    if parts.is_empty() {
        return None;
    }
    let body = parts
        .iter()
        .map(|p| format!("({p})"))
        .collect::<Vec<_>>()
        .join(" || ");
    Some(match since {
        Some(t) => format!("#timestamp >= @{} && ({body})", t.div_euclid(1_000_000_000)),
        None => body,
    })
}

/// What a retro match touched.
#[derive(Debug, Default)]
pub struct RetroStats {
    /// The search's expression (`None`: no schema of the archive can match).
    pub prefilter: Option<String>,
    /// Events the pre-filter let through (tested exactly).
    pub candidates: u64,
    /// What the search read and skipped.
    pub search: Option<SearchStats>,
    /// Damaged segments or batches met (skipped).
    pub errors: Vec<QueryError>,
}

/// Matches `m` against `archive` (events from `since` on), calling `each` with every
/// sighting in ID order; one search in all.
pub fn retro_match<E: From<QueryError>>(
    archive: &Archive,
    m: &Matcher,
    since: Option<i64>,
    mut each: impl FnMut(Sighting) -> Result<(), E>,
) -> Result<RetroStats, E> {
    let schemas = archive_schemas(archive);
    let mut stats = RetroStats {
        prefilter: prefilter(m, &schemas, since),
        ..RetroStats::default()
    };
    let Some(text) = stats.prefilter.clone() else {
        return Ok(stats);
    };
    let query = Query::parse(&text).map_err(|e| E::from(QueryError::from(e)))?;
    // Only the fields the matcher reads are rebuilt for it, not whole events.
    let mut read: Vec<String> = Vec::new();
    for s in &schemas {
        for &f in m.plan(s).fields_read() {
            let name = &s.fields[f].name;
            if !read.contains(name) {
                read.push(name.clone());
            }
        }
    }
    let spec = ScanSpec {
        columns: Some(read),
        ..ScanSpec::new(query)
    };
    let mut search = Search::planned(archive, &spec, None).map_err(E::from)?;
    let mut plans: Vec<(SchemaRef, SchemaPlan)> = Vec::new();
    let mut hits: Vec<Hit> = Vec::new();
    for batch in search.by_ref() {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                stats.errors.push(e);
                continue;
            }
        };
        let schema = batch.schema().clone();
        let at = match plans
            .iter()
            .position(|(s, _)| std::sync::Arc::ptr_eq(s, &schema))
        {
            Some(at) => at,
            None => {
                plans.push((schema.clone(), m.plan(&schema)));
                plans.len() - 1
            }
        };
        let plan = &plans[at].1;
        for (id, row) in batch.ids().into_iter().zip(batch.rows()) {
            stats.candidates += 1;
            hits.clear();
            let time = m
                .match_row(&schema, plan, row, &mut hits)
                .map_err(|e| E::from(QueryError::from(e)))?;
            if since.is_some_and(|s| time.is_none_or(|t| t < s)) {
                continue;
            }
            for h in hits.drain(..) {
                each(Sighting {
                    id,
                    schema: schema.name.clone(),
                    time,
                    field: schema.fields[h.field].name.clone(),
                    value: h.value,
                    indicator: m.indicator(h.indicator).to_indicator(),
                })?;
            }
        }
    }
    stats.search = Some(search.stats().clone());
    Ok(stats)
}

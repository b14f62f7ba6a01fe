//! The match table (which fields each indicator type is matched against) and the
//! [`Matcher`]: a set compiled into hash tables, that tests the rows of a batch exactly.
//!
//! The matcher knows nothing of how rows reach it: [`super::retro`] feeds it the rows a
//! pruned search lets through; live matching can feed it each batch before it commits.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::Range;
use std::sync::Arc;

use hashbrown::HashTable;

use crate::query::concepts::{self, Concepts};
use crate::types::{Schema, Type};
use crate::value::{DecodeError, RowCursor, ValueRef};

use super::indicator::{
    canonical_ip, mapped_len, mask, parse_subnet, to_bits, IndicatorRef, IndicatorType,
};
use super::set::{IndicatorSet, Store};

/// Where an indicator type is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every field of type `addr` (or a set or vector of them) of every schema.
    AddrFields,
    /// The fields of these concepts (a concept the table lacks: nothing, until a concepts
    /// file defines it).
    Concepts(&'static [&'static str]),
}

/// The match table: for each indicator type, the fields it is matched against.
///
/// | type | fields | rule |
/// | --- | --- | --- |
/// | `addr` | every `addr` field (and set/vector of `addr`) | equal (IPv4 = IPv4-mapped IPv6) |
/// | `subnet` | the same | the address lies in the network |
/// | `domain` | `net.domain` | equal, or a subdomain (`evil.com` matches `a.evil.com`), case-insensitive |
/// | `url` | `net.url` | the schema's first `net.domain` field (the host) followed by the URL field equals the indicator (host case-insensitive); a schema without a host field: the URL field alone |
/// | `file_hash` | `file.hash.md5`, `file.hash.sha1`, `file.hash.sha256` | equal to the lowercase hex |
/// | `cert_hash` | `tls.cert.hash` (not shipped) | equal to the lowercase hex |
/// | `software` | `net.user_agent` | equal |
/// | `user_name` | `user.name` (not shipped) | equal |
/// | `email` | `email.addr` (not shipped) | equal, case-insensitive |
pub fn target(kind: IndicatorType) -> Target {
    match kind {
        IndicatorType::Addr | IndicatorType::Subnet => Target::AddrFields,
        IndicatorType::Domain => Target::Concepts(&["net.domain"]),
        IndicatorType::Url => Target::Concepts(&["net.url"]),
        IndicatorType::FileHash => {
            Target::Concepts(&["file.hash.md5", "file.hash.sha1", "file.hash.sha256"])
        }
        IndicatorType::CertHash => Target::Concepts(&["tls.cert.hash"]),
        IndicatorType::Software => Target::Concepts(&["net.user_agent"]),
        IndicatorType::UserName => Target::Concepts(&["user.name"]),
        IndicatorType::Email => Target::Concepts(&["email.addr"]),
    }
}

/// How one field of a schema is tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Addresses and subnets.
    Addr,
    /// Domains with their subdomains.
    Domain,
    /// URLs: the host field's value (if any) before the field's.
    Url {
        /// The schema's host field.
        host: Option<usize>,
    },
    /// Equal strings of one type (hashes, software, user names, email addresses).
    Exact(IndicatorType),
}

/// The fields of one schema that a matcher tests, and how.
#[derive(Debug, Clone, Default)]
pub struct SchemaPlan {
    /// (field index, whether it is a container, check), in field order.
    pub checks: Vec<(usize, bool, Check)>,
    /// The event time field (`ts`).
    pub ts: Option<usize>,
    /// Every field read: checks, hosts and `ts`, ascending.
    read: Vec<usize>,
}

impl SchemaPlan {
    /// Every field [`Matcher::match_row`] reads: checks, hosts and `ts`, ascending.
    pub fn fields_read(&self) -> &[usize] {
        &self.read
    }

    /// Whether nothing of this schema can match.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }
}

/// One match within a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The indicator ([`Matcher::indicator`] of it).
    pub indicator: usize,
    /// The field that matched (an index into the schema's fields).
    pub field: usize,
    /// The value that matched, as text (an element of a container; for a URL, host and URL).
    pub value: String,
}

/// One match within a batch ([`Matcher::match_batch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHit {
    /// The row within the batch.
    pub row: usize,
    /// The event's ID (the batch's first ID plus the row: meaningful once the archive has
    /// assigned IDs).
    pub id: u64,
    /// The event's time (`ts`), if it has one.
    pub time: Option<i64>,
    /// The indicator and the field.
    pub hit: Hit,
}

/// A set compiled for matching: the indicators that have not expired, in hash tables.
///
/// It shares the set's storage (values and metadata are not copied; a later change to the
/// set copies them for the set instead): its tables hold positions of indicators, and the
/// string tables (domains, URLs, hashes, ...) are keyed by a hash of (type, value), each
/// candidate compared with the stored value.
#[derive(Debug, Clone)]
pub struct Matcher {
    set: String,
    store: Arc<Store>,
    /// The indicators matched, as positions in `store` ([`Hit::indicator`] indexes this):
    /// [`Live`].
    live: Live,
    /// The indicators of each type (sorted by type) as a range of `live`, by
    /// [`IndicatorType::ALL`]'s order.
    kinds: [Range<usize>; 9],
    addrs: HashMap<u128, usize, ahash::RandomState>,
    /// Per mapped prefix length (ascending), network bits -> indicator.
    subnets: Vec<(u8, HashMap<u128, usize, ahash::RandomState>)>,
    /// Domains, URLs and the types matched by equal strings: indexes into `live`, by the hash
    /// of (type, value).
    strings: HashTable<usize>,
    hasher: ahash::RandomState,
}

/// The indicators of a store a matcher matches: all of them (none has expired, as usual),
/// or those listed.
#[derive(Debug, Clone)]
enum Live {
    All(usize),
    Some(Vec<usize>),
}

impl Live {
    fn of(store: &Store, now: i64) -> Live {
        let live = |i: &usize| store.get(*i).is_some_and(|r| !r.expired(now));
        if (0..store.len()).all(|i| live(&i)) {
            Live::All(store.len())
        } else {
            Live::Some((0..store.len()).filter(live).collect())
        }
    }

    fn len(&self) -> usize {
        match self {
            Live::All(n) => *n,
            Live::Some(v) => v.len(),
        }
    }

    /// The position in the store of the `n`th.
    fn at(&self, n: usize) -> usize {
        match self {
            Live::All(_) => n,
            Live::Some(v) => v[n],
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).map(|n| self.at(n))
    }
}

/// Whether `ty` holds strings (or a container of them).
fn stringy(ty: &Type) -> bool {
    ty.is_stringy() || (ty.is_container() && ty.element().is_some_and(Type::is_stringy))
}

fn addrish(ty: &Type) -> bool {
    *ty == Type::Addr || (ty.is_container() && ty.element() == Some(&Type::Addr))
}

/// The position of `kind` in [`IndicatorType::ALL`].
fn kind_index(kind: IndicatorType) -> usize {
    IndicatorType::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_default()
}

impl Matcher {
    /// The matcher of the indicators of `set` that have not expired at `now` (ns).
    pub fn new(set: &IndicatorSet, now: i64) -> Matcher {
        let store = set.storage().clone();
        let live = Live::of(&store, now);
        let mut kinds: [Range<usize>; 9] = Default::default();
        let mut counts = [0usize; 9];
        for i in live.iter() {
            if let Some(k) = store.kind(i) {
                counts[kind_index(k)] += 1;
            }
        }
        let mut at = 0;
        for (k, n) in counts.iter().enumerate() {
            kinds[k] = at..at + n;
            at += n;
        }
        let count = |k: IndicatorType| counts[kind_index(k)];
        let strings_len = live.len() - count(IndicatorType::Addr) - count(IndicatorType::Subnet);
        let hasher = ahash::RandomState::new();
        let mut m = Matcher {
            set: set.name().to_string(),
            addrs: HashMap::with_capacity_and_hasher(count(IndicatorType::Addr), hasher.clone()),
            subnets: Vec::new(),
            strings: HashTable::with_capacity(strings_len),
            hasher,
            store,
            live,
            kinds,
        };
        for (n, i) in m.live.iter().enumerate() {
            let (Some(kind), value) = (m.store.kind(i), m.store.value_of(i)) else {
                continue;
            };
            match kind {
                IndicatorType::Addr => {
                    if let Ok(a) = value.parse::<IpAddr>() {
                        m.addrs.insert(to_bits(a), n);
                    }
                }
                IndicatorType::Subnet => {
                    if let Some((net, len)) = parse_subnet(value) {
                        let wide = mapped_len(net, len);
                        let at = match m.subnets.iter().position(|(l, _)| *l == wide) {
                            Some(at) => at,
                            None => {
                                let table = HashMap::with_hasher(m.hasher.clone());
                                m.subnets.push((wide, table));
                                m.subnets.len() - 1
                            }
                        };
                        m.subnets[at].1.insert(to_bits(net), n);
                    }
                }
                kind => {
                    let (store, live, hasher) = (&m.store, &m.live, &m.hasher);
                    let hash = hasher.hash_one((kind, value.as_bytes()));
                    m.strings.insert_unique(hash, n, |&o| {
                        let i = live.at(o);
                        let k = store.kind(i).unwrap_or(kind);
                        hasher.hash_one((k, store.value_of(i).as_bytes()))
                    });
                }
            }
        }
        m.subnets.sort_by_key(|(l, _)| *l);
        m
    }

    /// The set's name.
    pub fn set_name(&self) -> &str {
        &self.set
    }

    /// The number of indicators matched (those not expired): [`Hit::indicator`] is below it.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether it matches no indicator.
    pub fn is_empty(&self) -> bool {
        self.live.len() == 0
    }

    /// Indicator `i` (a [`Hit::indicator`]): its value, type, metadata and expiry, borrowed
    /// from the set's storage. Panics if `i` is not below [`Matcher::len`].
    pub fn indicator(&self, i: usize) -> IndicatorRef<'_> {
        match self.store.get(self.live.at(i)) {
            Some(r) => r,
            None => unreachable!("a matcher's positions are of its store"),
        }
    }

    /// The indicators matched (those not expired), in the order [`Hit::indicator`] counts
    /// them.
    pub fn indicators(
        &self,
    ) -> impl DoubleEndedIterator<Item = IndicatorRef<'_>> + ExactSizeIterator + '_ {
        (0..self.live.len()).map(|i| self.indicator(i))
    }

    /// Whether it has indicators of `kind`.
    pub fn has(&self, kind: IndicatorType) -> bool {
        !self.kinds[kind_index(kind)].is_empty()
    }

    /// The values of the indicators of `kind`.
    pub fn values(&self, kind: IndicatorType) -> impl ExactSizeIterator<Item = &str> {
        self.kinds[kind_index(kind)]
            .clone()
            .map(|n| self.store.value_of(self.live.at(n)))
    }

    /// The indicator of (`kind`, `value`) among the string tables.
    fn lookup(&self, kind: IndicatorType, value: &[u8]) -> Option<usize> {
        let hash = self.hasher.hash_one((kind, value));
        self.strings
            .find(hash, |&o| {
                let i = self.live.at(o);
                self.store.kind(i) == Some(kind) && self.store.value_of(i).as_bytes() == value
            })
            .copied()
    }

    /// Which fields of `schema` are tested, by the match table over `concepts`.
    pub fn plan_with(&self, schema: &Schema, concepts: &Concepts) -> SchemaPlan {
        let mut checks: Vec<(usize, bool, Check)> = Vec::new();
        let mut add = |f: usize, check: Check| {
            if !checks.iter().any(|(g, _, c)| *g == f && *c == check) {
                checks.push((f, schema.fields[f].ty.is_container(), check));
            }
        };
        let concept_fields = |names: &[&str]| -> Vec<usize> {
            names
                .iter()
                .flat_map(|n| concepts.fields_in(n, schema).unwrap_or_default())
                .filter(|&f| f < schema.fields.len() && stringy(&schema.fields[f].ty))
                .collect()
        };
        if self.has(IndicatorType::Addr) || self.has(IndicatorType::Subnet) {
            for (f, field) in schema.fields.iter().enumerate() {
                if addrish(&field.ty) {
                    add(f, Check::Addr);
                }
            }
        }
        for kind in IndicatorType::ALL {
            if !self.has(kind) {
                continue;
            }
            let Target::Concepts(names) = target(kind) else {
                continue;
            };
            for f in concept_fields(names) {
                let check = match kind {
                    IndicatorType::Domain => Check::Domain,
                    IndicatorType::Url => Check::Url {
                        host: concept_fields(&["net.domain"])
                            .into_iter()
                            .find(|&h| !schema.fields[h].ty.is_container()),
                    },
                    kind => Check::Exact(kind),
                };
                add(f, check);
            }
        }
        checks.sort_by_key(|(f, ..)| *f);
        let ts = schema.ts_index();
        let mut read: Vec<usize> = checks.iter().map(|(f, ..)| *f).collect();
        for (_, _, c) in &checks {
            if let Check::Url { host: Some(h) } = c {
                read.push(*h);
            }
        }
        read.extend(ts);
        read.sort_unstable();
        read.dedup();
        SchemaPlan { checks, ts, read }
    }

    /// [`Matcher::plan_with`] the active concepts.
    pub fn plan(&self, schema: &Schema) -> SchemaPlan {
        self.plan_with(schema, &concepts::active())
    }

    /// The matches of one encoded row of `schema` (planned as `plan`), appended to `out`;
    /// returns the event's time (`ts`), if it has one.
    pub fn match_row(
        &self,
        schema: &Schema,
        plan: &SchemaPlan,
        row: &[u8],
        out: &mut Vec<Hit>,
    ) -> Result<Option<i64>, DecodeError> {
        if plan.checks.is_empty() {
            return Ok(None);
        }
        let mut c = RowCursor::new(row);
        c.row_header(schema.fields.len())?;
        let mut values: Vec<(usize, ValueRef<'_>)> = Vec::with_capacity(plan.read.len());
        let mut next = 0;
        for &f in &plan.read {
            c.skip_many(f - next)?;
            values.push((f, c.read(&schema.fields[f].ty)?));
            next = f + 1;
        }
        Ok(self.match_values(plan, &values, out))
    }

    /// The matches of every row of `batch` (of the schema `plan` was made for): `each(row,
    /// time, hits)` is called for each row with hits (taken from `hits` as it likes). A
    /// columnar batch is read by its columns, only those the plan reads, so no rows are
    /// assembled (live matching runs on the writer's thread, where that showed as the
    /// largest part of its cost). An error names the row that could not be decoded.
    pub fn match_rows(
        &self,
        batch: &crate::batch::Batch,
        plan: &SchemaPlan,
        mut each: impl FnMut(usize, Option<i64>, &mut Vec<Hit>),
    ) -> Result<(), (usize, DecodeError)> {
        if plan.checks.is_empty() {
            return Ok(());
        }
        let schema = batch.schema();
        let mut hits = Vec::new();
        let Some(cols) = batch.columns() else {
            for (row, bytes) in batch.rows().enumerate() {
                let time = self
                    .match_row(schema, plan, bytes, &mut hits)
                    .map_err(|e| (row, e))?;
                if !hits.is_empty() {
                    each(row, time, &mut hits);
                    hits.clear();
                }
            }
            return Ok(());
        };
        let mut cursors: Vec<(usize, RowCursor<'_>)> = Vec::with_capacity(plan.read.len());
        for &f in &plan.read {
            let col = cols.get(f).ok_or((0, DecodeError::Truncated(0)))?;
            cursors.push((f, RowCursor::new(col)));
        }
        let mut values: Vec<(usize, ValueRef<'_>)> = Vec::with_capacity(plan.read.len());
        for row in 0..batch.len() {
            values.clear();
            for (f, c) in &mut cursors {
                values.push((*f, c.read(&schema.fields[*f].ty).map_err(|e| (row, e))?));
            }
            let time = self.match_values(plan, &values, &mut hits);
            if !hits.is_empty() {
                each(row, time, &mut hits);
                hits.clear();
            }
        }
        Ok(())
    }

    /// The matches of one row's `values` of the fields `plan` reads (in its order); returns
    /// the event's time.
    fn match_values(
        &self,
        plan: &SchemaPlan,
        values: &[(usize, ValueRef<'_>)],
        out: &mut Vec<Hit>,
    ) -> Option<i64> {
        let get = |f: usize| values.iter().find(|(g, _)| *g == f).map(|(_, v)| v);
        for &(f, _, check) in &plan.checks {
            let Some(v) = get(f) else { continue };
            let host = match check {
                Check::Url { host: Some(h) } => match get(h) {
                    Some(ValueRef::String(s)) => Some(*s),
                    _ => None,
                },
                _ => None,
            };
            let mut each = |v: &ValueRef<'_>| self.match_value(check, host, f, v, out);
            match v {
                ValueRef::List(items) => items.iter().for_each(&mut each),
                v => each(v),
            }
        }
        plan.ts.and_then(|t| match get(t) {
            Some(ValueRef::Time(ns)) => Some(*ns),
            _ => None,
        })
    }

    /// The matches of every row of `batch`, in row order: what live matching calls on each
    /// batch before it commits (plans are cached by the caller per schema in a loop; this
    /// plans the batch's schema once).
    pub fn match_batch(&self, batch: &crate::batch::Batch) -> Result<Vec<BatchHit>, DecodeError> {
        let plan = self.plan(batch.schema());
        let mut out = Vec::new();
        self.match_rows(batch, &plan, |row, time, hits| {
            out.extend(hits.drain(..).map(|hit| BatchHit {
                row,
                id: batch.id() + row as u64,
                time,
                hit,
            }));
        })
        .map_err(|(_, e)| e)?;
        Ok(out)
    }

    fn match_value(
        &self,
        check: Check,
        host: Option<&[u8]>,
        field: usize,
        v: &ValueRef<'_>,
        out: &mut Vec<Hit>,
    ) {
        let mut hit = |indicator: usize, value: String| {
            out.push(Hit {
                indicator,
                field,
                value,
            })
        };
        match (check, v) {
            (Check::Addr, ValueRef::Addr(a)) => {
                let bits = to_bits(*a);
                let text = || canonical_ip(*a).to_string();
                if let Some(&i) = self.addrs.get(&bits) {
                    hit(i, text());
                }
                for (len, nets) in &self.subnets {
                    if let Some(&i) = nets.get(&(bits & mask(*len))) {
                        hit(i, text());
                    }
                }
            }
            (Check::Domain, ValueRef::String(s)) => {
                if !self.has(IndicatorType::Domain) {
                    return;
                }
                let text = String::from_utf8_lossy(s);
                let lower = text.trim_end_matches('.').to_ascii_lowercase();
                let mut rest = lower.as_str();
                loop {
                    if let Some(i) = self.lookup(IndicatorType::Domain, rest.as_bytes()) {
                        hit(i, text.to_string());
                    }
                    match rest.find('.') {
                        Some(dot) => rest = &rest[dot + 1..],
                        None => break,
                    }
                }
            }
            (Check::Url { .. }, ValueRef::String(s)) => {
                let path = String::from_utf8_lossy(s);
                let full = match host {
                    Some(h) => format!("{}{path}", String::from_utf8_lossy(h).to_ascii_lowercase()),
                    None => path.to_string(),
                };
                if let Some(i) = self.lookup(IndicatorType::Url, full.as_bytes()) {
                    hit(i, full);
                }
            }
            (Check::Exact(kind), ValueRef::String(s)) => {
                let lower;
                let key: &[u8] = match kind {
                    IndicatorType::Email => {
                        lower = s.to_ascii_lowercase();
                        &lower
                    }
                    _ => s,
                };
                if let Some(i) = self.lookup(kind, key) {
                    hit(i, String::from_utf8_lossy(s).into_owned());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Field;
    use crate::unstable::intel::Indicator;
    use crate::value::{encode_row, Value};

    fn set(items: &[(&str, IndicatorType)]) -> IndicatorSet {
        let mut s = IndicatorSet::new("t").unwrap();
        s.add(items.iter().map(|(v, t)| Indicator::new(v, *t).unwrap()));
        s
    }

    fn schema() -> Schema {
        let f = |n: &str, ty: Type| Field { name: n.into(), ty };
        Schema::new(
            "zeek.http",
            vec![
                f("ts", Type::Time),
                f("id.orig_h", Type::Addr),
                f("host", Type::String),
                f("uri", Type::String),
                f("user_agent", Type::String),
            ],
        )
    }

    fn row(orig: &str, host: &str, uri: &str, ua: &str) -> Vec<u8> {
        let mut buf = Vec::new();
        encode_row(
            &[
                Value::Time(5),
                Value::Addr(orig.parse().unwrap()),
                Value::String(host.as_bytes().to_vec()),
                Value::String(uri.as_bytes().to_vec()),
                Value::String(ua.as_bytes().to_vec()),
            ],
            &mut buf,
        );
        buf
    }

    #[test]
    fn matches_each_rule_of_the_table() {
        let s = set(&[
            ("10.1.0.0/16", IndicatorType::Subnet),
            ("10.1.2.3", IndicatorType::Addr),
            ("evil.com", IndicatorType::Domain),
            ("evil.com/x?y", IndicatorType::Url),
            ("BadBot/1.0", IndicatorType::Software),
        ]);
        let m = Matcher::new(&s, 0);
        let schema = schema();
        let plan = m.plan(&schema);
        assert_eq!(plan.checks.len(), 4, "{plan:?}");
        let mut out = Vec::new();
        let ts = m
            .match_row(
                &schema,
                &plan,
                &row("10.1.2.3", "A.Evil.com", "/x?y", "BadBot/1.0"),
                &mut out,
            )
            .unwrap();
        assert_eq!(ts, Some(5));
        let got: Vec<&str> = out.iter().map(|h| m.indicator(h.indicator).value).collect();
        assert_eq!(
            got,
            vec!["10.1.2.3", "10.1.0.0/16", "evil.com", "BadBot/1.0"]
        );
        out.clear();
        m.match_row(
            &schema,
            &plan,
            &row("10.2.0.1", "notevil.com", "/x?y", "x"),
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty(), "{out:?}");
        out.clear();
        m.match_row(
            &schema,
            &plan,
            &row("10.2.0.1", "evil.com", "/x?y", "x"),
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 2, "domain and URL: {out:?}");
    }

    #[test]
    fn matches_a_whole_batch_with_its_ids() {
        for columnar in [false, true] {
            matches_a_whole_batch(columnar);
        }
    }

    /// [`matches_a_whole_batch_with_its_ids`] of a batch of rows or of columns (as the Zeek
    /// parser makes them).
    fn matches_a_whole_batch(columnar: bool) {
        let s = set(&[
            ("evil.com", IndicatorType::Domain),
            ("10.0.0.0/8", IndicatorType::Subnet),
        ]);
        let m = Matcher::new(&s, 0);
        let mut b = crate::batch::BatchBuilder::new(schema().into_shared());
        if columnar {
            b = b.columnar();
        }
        for (k, host) in ["x.evil.com", "good.org", "EVIL.com"].iter().enumerate() {
            let orig = if k == 1 { "10.1.2.3" } else { "192.168.0.1" };
            let row = row(orig, host, "/", "ua");
            let values = crate::value::decode_row(
                &row,
                &schema()
                    .fields
                    .iter()
                    .map(|f| f.ty.clone())
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            let mut enc = b.begin_row();
            for v in &values {
                enc.value(v);
            }
            b.finish_row(Some(5));
        }
        let mut batch = b.finish();
        assert_eq!(batch.columns().is_some(), columnar);
        batch.set_id(100);
        let got: Vec<(usize, u64, String)> = m
            .match_batch(&batch)
            .unwrap()
            .iter()
            .map(|h| (h.row, h.id, h.hit.value.clone()))
            .collect();
        let want = [
            (0, 100, "x.evil.com"),
            (1, 101, "10.1.2.3"),
            (2, 102, "EVIL.com"),
        ];
        assert_eq!(
            got,
            want.map(|(r, i, v)| (r, i, v.to_string())),
            "columnar: {columnar}"
        );
    }

    #[test]
    fn a_matcher_shares_the_sets_storage() {
        let s = set(&[
            ("evil.com", IndicatorType::Domain),
            ("10.1.2.3", IndicatorType::Addr),
        ]);
        let m = Matcher::new(&s, 0);
        assert!(
            Arc::ptr_eq(s.storage(), &m.store),
            "not a copy of the indicators"
        );
        let got: Vec<&str> = m.indicators().map(|i| i.value).collect();
        assert_eq!(got, vec!["10.1.2.3", "evil.com"]);
        assert_eq!(
            m.values(IndicatorType::Domain).collect::<Vec<_>>(),
            vec!["evil.com"]
        );
        // A change to the set after the matcher leaves the matcher as it was.
        let mut s = s;
        s.add([Indicator::new("bad.org", IndicatorType::Domain).unwrap()]);
        assert_eq!(m.len(), 2);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn expired_indicators_do_not_match() {
        let mut s = IndicatorSet::new("t").unwrap();
        let mut i = Indicator::new("10.1.2.3", IndicatorType::Addr).unwrap();
        i.valid_until = Some(100);
        s.add([i]);
        assert_eq!(Matcher::new(&s, 99).indicators().len(), 1);
        assert!(Matcher::new(&s, 100).is_empty());
    }
}

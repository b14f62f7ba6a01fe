//! The `community_id` of `zeek.conn` events, computed at import.
//!
//! Most Zeek installations do not load the `community-id` package, so their `conn` logs have
//! no `community_id`. [`ConnCommunityId`] adds it to every batch of `zeek.conn` whose schema
//! lacks a field of that name: one more field, [`FIELD`] (`string`), at the end of the
//! schema, holding Community ID v1 ([`crate::codec::community_id`]) of the row's
//! `id.orig_h`, `id.orig_p`, `id.resp_h`, `id.resp_p` and `proto`. Every other batch (other
//! schemas, and conn logs that carry their own `community_id`) passes unchanged.
//!
//! Zeek's conn has no IP protocol number but the enum `proto`: `tcp` is 6, `udp` 17, `sctp`
//! 132, and `icmp` is ICMP (1) between IPv4 addresses and ICMPv6 (58) between IPv6 ones (Zeek
//! logs both as `icmp`); for ICMP, Zeek writes the message type as `id.orig_p` and the
//! counterpart type, or else the code, as `id.resp_p`, which is what Community ID hashes.
//! The value is unset where the tuple is incomplete (an unset address or port), a port is
//! above 65535, or the protocol is unknown (`unknown_transport`).
//!
//! The source stage applies it to every batch it reads ([`crate::source::SourceConfig`]'s
//! `community_id`), for every way in: files, globs, stdin, `--follow`, `weir run`.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use crate::batch::Batch;
use crate::codec::community_id::{community_id_v1_bytes, proto, FlowTuple};
use crate::types::{Field, Schema, SchemaRef, Type};
use crate::value::{DecodeError, RowCursor, RowEncoder, ValueRef};

/// The name of the field added (and of the one that, present, keeps a log's own IDs).
pub const FIELD: &str = crate::types::COMMUNITY_ID_FIELD;

/// The schema whose events get a Community ID.
pub const CONN_SCHEMA: &str = "zeek.conn";

/// The 5-tuple's fields, in the order [`tuple`] takes their values.
const TUPLE_FIELDS: [&str; 5] = ["id.orig_h", "id.orig_p", "id.resp_h", "id.resp_p", "proto"];

/// Adds `community_id` to the `zeek.conn` batches that lack it (see the module docs).
#[derive(Debug)]
pub struct ConnCommunityId {
    seed: u16,
    /// The last input schema seen and what it becomes (`None`: passed unchanged), so that the
    /// batches of one input share one output schema.
    last: Mutex<Option<(SchemaRef, Option<Plan>)>>,
}

/// How the batches of one conn schema get their IDs.
#[derive(Debug, Clone)]
struct Plan {
    /// The input schema with [`FIELD`] appended.
    schema: SchemaRef,
    /// Field indices of [`TUPLE_FIELDS`].
    fields: [usize; 5],
}

impl ConnCommunityId {
    /// Computes IDs with `seed`.
    pub fn new(seed: u16) -> ConnCommunityId {
        ConnCommunityId {
            seed,
            last: Mutex::new(None),
        }
    }

    /// The seed.
    pub fn seed(&self) -> u16 {
        self.seed
    }

    /// What batches of `schema` become: `None` unless it is a conn schema without
    /// [`FIELD`] that has the 5-tuple's fields.
    fn plan(&self, schema: &SchemaRef) -> Option<Plan> {
        let mut last = self.last.lock().ok();
        if let Some(Some((s, plan))) = last.as_deref() {
            if Arc::ptr_eq(s, schema) || s == schema {
                return plan.clone();
            }
        }
        let plan = plan_for(schema);
        if let Some(slot) = last.as_deref_mut() {
            *slot = Some((schema.clone(), plan.clone()));
        }
        plan
    }

    /// `batch` with its Community IDs, if it is one of conn without them; else unchanged.
    /// Fails only on a row that does not decode as its schema says (a reader's bug).
    pub fn apply(&self, mut batch: Batch) -> Result<Batch, CommunityIdError> {
        let Some(plan) = self.plan(batch.schema()) else {
            return Ok(batch);
        };
        let tuples =
            read_tuples(&batch, &plan.fields).map_err(|error| CommunityIdError::Decode {
                schema: batch.schema().name.clone(),
                error,
            })?;
        let mut values = Vec::with_capacity(tuples.len() * 32);
        let mut ends = Vec::with_capacity(tuples.len());
        for t in &tuples {
            let mut e = RowEncoder::new(&mut values);
            match t.as_ref().and_then(|t| community_id_v1_bytes(self.seed, t)) {
                Some(id) => e.bytes(&id),
                None => e.null(),
            }
            ends.push(values.len());
        }
        if !batch.push_field(plan.schema.clone(), values, &ends) {
            return Err(CommunityIdError::Rows {
                schema: batch.schema().name.clone(),
                fields: batch.schema().fields.len(),
            });
        }
        Ok(batch)
    }
}

/// A batch whose rows do not decode as its schema says (a reader's bug, never the input's).
#[derive(Debug, thiserror::Error)]
pub enum CommunityIdError {
    /// A value of the 5-tuple does not decode.
    #[error("cannot compute community_id of {schema}: {error}")]
    Decode {
        /// The batch's schema name.
        schema: String,
        /// What the row decoder found.
        #[source]
        error: DecodeError,
    },
    /// A row does not hold the schema's field count.
    #[error("cannot add community_id to {schema}: a row does not hold its {fields} fields")]
    Rows {
        /// The batch's schema name.
        schema: String,
        /// The schema's field count.
        fields: usize,
    },
}

fn plan_for(schema: &Schema) -> Option<Plan> {
    if schema.name != CONN_SCHEMA || schema.fields.iter().any(|f| f.name == FIELD) {
        return None;
    }
    let mut fields = [0; 5];
    for (slot, name) in fields.iter_mut().zip(TUPLE_FIELDS) {
        *slot = schema.fields.iter().position(|f| f.name == name)?;
    }
    let mut out = schema.clone();
    out.fields.push(Field::new(FIELD, Type::String));
    Some(Plan {
        schema: out.into_shared(),
        fields,
    })
}

/// The 5-tuple of every row of `batch` (`None` where it is incomplete), read from its columns
/// when it has them, else from its rows.
fn read_tuples(batch: &Batch, fields: &[usize; 5]) -> Result<Vec<Option<FlowTuple>>, DecodeError> {
    let schema = batch.schema();
    let types: Vec<&Type> = fields.iter().map(|&i| &schema.fields[i].ty).collect();
    let mut out = Vec::with_capacity(batch.len());
    if let Some(cols) = batch.columns() {
        let mut cursors: Vec<RowCursor<'_>> = fields
            .iter()
            .map(|&i| {
                cols.get(i)
                    .map_or_else(|| RowCursor::new(&[]), |c| RowCursor::new(c))
            })
            .collect();
        for _ in 0..batch.len() {
            let mut vals: [ValueRef<'_>; 5] = std::array::from_fn(|_| ValueRef::Null);
            for ((v, c), ty) in vals.iter_mut().zip(cursors.iter_mut()).zip(&types) {
                *v = c.read(ty)?;
            }
            out.push(tuple(&vals));
        }
        return Ok(out);
    }
    // Fields in row order, each with its slot in the tuple.
    let mut order: Vec<(usize, usize)> = fields.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    order.sort_unstable();
    let n = schema.fields.len();
    for row in batch.rows() {
        let mut c = RowCursor::new(row);
        c.row_header(n)?;
        let mut at = 0;
        let mut vals: [ValueRef<'_>; 5] = std::array::from_fn(|_| ValueRef::Null);
        for &(i, k) in &order {
            c.skip_many(i - at)?;
            vals[k] = c.read(types[k])?;
            at = i + 1;
        }
        out.push(tuple(&vals));
    }
    Ok(out)
}

/// The flow of one row's `[orig_h, orig_p, resp_h, resp_p, proto]`.
fn tuple(v: &[ValueRef<'_>; 5]) -> Option<FlowTuple> {
    let src = addr(&v[0])?;
    let dst = addr(&v[2])?;
    let ports = (port(&v[1])?, port(&v[3])?);
    let p = match &v[4] {
        ValueRef::String(s) => *s,
        _ => return None,
    };
    let p = match p {
        b"tcp" => proto::TCP,
        b"udp" => proto::UDP,
        b"sctp" => proto::SCTP,
        b"icmp" => match (src, dst) {
            (IpAddr::V6(_), IpAddr::V6(_)) => proto::ICMP6,
            _ => proto::ICMP,
        },
        _ => return None,
    };
    Some(FlowTuple {
        proto: p,
        src,
        dst,
        ports: Some(ports),
    })
}

/// An address, also one written as text (a conn log typed by inference).
fn addr(v: &ValueRef<'_>) -> Option<IpAddr> {
    match v {
        ValueRef::Addr(a) => Some(*a),
        ValueRef::String(s) => std::str::from_utf8(s).ok()?.parse().ok(),
        _ => None,
    }
}

/// A port, also one written as a count or an int (a conn log typed by inference).
fn port(v: &ValueRef<'_>) -> Option<u16> {
    match v {
        ValueRef::Port(n) | ValueRef::Count(n) => u16::try_from(*n).ok(),
        ValueRef::Int(n) => u16::try_from(*n).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchBuilder;
    use crate::value::Value;

    fn conn_schema(name: &str) -> SchemaRef {
        let f = |n: &str, ty| Field::new(n, ty);
        Schema::new(
            name,
            vec![
                f("ts", Type::Time),
                f("uid", Type::String),
                f("id.orig_h", Type::Addr),
                f("id.orig_p", Type::Port),
                f("id.resp_h", Type::Addr),
                f("id.resp_p", Type::Port),
                f("proto", Type::Enum),
            ],
        )
        .into_shared()
    }

    /// Rows `(orig_h, orig_p, resp_h, resp_p, proto)`, `None` for unset, as rows or columns.
    fn conn(name: &str, rows: &[(&str, Option<u64>, &str, u64, &str)], columnar: bool) -> Batch {
        let mut b = BatchBuilder::new(conn_schema(name));
        if columnar {
            b = b.columnar();
        }
        for (i, &(src, sport, dst, dport, p)) in rows.iter().enumerate() {
            let (mut f, _) = b.begin_fields(false);
            f.field(0).int(i as i64);
            f.field(1).bytes(format!("C{i}").as_bytes());
            f.field(2).addr(src.parse().unwrap());
            match sport {
                Some(n) => f.field(3).uint(n),
                None => f.field(3).null(),
            }
            f.field(4).addr(dst.parse().unwrap());
            f.field(5).uint(dport);
            f.field(6).bytes(p.as_bytes());
            b.finish_row(Some(i as i64));
        }
        b.finish()
    }

    fn ids(b: &Batch) -> Vec<Value> {
        b.to_values()
            .unwrap()
            .into_iter()
            .map(|r| r[7].clone())
            .collect()
    }

    const ROWS: &[(&str, Option<u64>, &str, u64, &str)] = &[
        ("128.232.110.120", Some(34855), "66.35.250.204", 80, "tcp"),
        ("8.8.8.8", Some(53), "192.168.1.52", 54585, "udp"),
        // Zeek writes ICMPv6 as `icmp`: neighbor solicitation, its counterpart as resp_p.
        (
            "fe80::200:86ff:fe05:80da",
            Some(135),
            "fe80::260:97ff:fe07:69ea",
            136,
            "icmp",
        ),
        ("192.168.0.89", Some(8), "192.168.0.1", 0, "icmp"),
        ("10.0.0.1", None, "10.0.0.2", 80, "tcp"),
        ("10.0.0.1", Some(0), "10.0.0.2", 0, "unknown_transport"),
        ("10.0.0.1", Some(70000), "10.0.0.2", 0, "udp"),
    ];

    #[test]
    fn adds_the_spec_ids_to_rows_and_columns_alike() {
        let step = ConnCommunityId::new(0);
        let want: Vec<Value> = [
            Some("1:LQU9qZlK+B5F3KDmev6m5PMibrg="),
            Some("1:d/FP5EW3wiY1vCndhwleRRKHowQ="),
            Some("1:dGHyGvjMfljg6Bppwm3bg0LO8TY="),
            Some("1:X0snYXpgwiv9TZtqg64sgzUn6Dk="),
            None,
            None,
            None,
        ]
        .iter()
        .map(|v| v.map_or(Value::Null, |s| Value::String(s.as_bytes().to_vec())))
        .collect();
        let rows = step.apply(conn(CONN_SCHEMA, ROWS, false)).unwrap();
        let cols = step.apply(conn(CONN_SCHEMA, ROWS, true)).unwrap();
        assert!(cols.columns().is_some());
        for b in [&rows, &cols] {
            assert_eq!(b.schema().fields.last().unwrap().name, FIELD);
            assert_eq!(ids(b), want);
        }
        assert_eq!(rows.data(), cols.data());
        // One output schema for the batches of one input schema.
        let again = step.apply(conn(CONN_SCHEMA, ROWS, false)).unwrap();
        assert!(Arc::ptr_eq(again.schema(), rows.schema()));
        // Another seed, other IDs.
        let seeded = ConnCommunityId::new(1).apply(conn(CONN_SCHEMA, ROWS, false));
        assert_eq!(
            ids(&seeded.unwrap())[0],
            Value::String(b"1:3V71V58M3Ksw/yuFALMcW0LAHvc=".to_vec())
        );
    }

    #[test]
    fn other_schemas_and_conn_with_its_own_ids_pass_unchanged() {
        let step = ConnCommunityId::new(0);
        let other = conn("zeek.conn_long", ROWS, false);
        assert_eq!(step.apply(other.clone()).unwrap(), other);
        // Already applied: the field is there.
        let once = step.apply(conn(CONN_SCHEMA, ROWS, true)).unwrap();
        assert_eq!(step.apply(once.clone()).unwrap(), once);
        // A conn schema without the 5-tuple.
        let mut b = BatchBuilder::new(
            Schema::new(CONN_SCHEMA, vec![Field::new("ts", Type::Time)]).into_shared(),
        );
        b.begin_row().int(1);
        b.finish_row(Some(1));
        let b = b.finish();
        assert_eq!(step.apply(b.clone()).unwrap(), b);
    }
}

//! The Arrow evaluator (`Program::evaluate_record_batch`) against the row evaluator
//! (`Program::matches_id`), row by row, on random rows of random schemas (every Zeek type,
//! unset values, empty containers and unset elements, strings that are not UTF-8) and random
//! expressions of the whole language (every operator, literal kind, field, type and meta
//! extractor, `&&`, `||`, `!`).
//!
//! The oracle is the rows the record batch reads back as (`record_batch_to_batches`): what the
//! Arrow data means. Where the Arrow form is lossless (every string UTF-8; the intervals
//! generated are whole microseconds, or nanoseconds below 11 days) the original rows must
//! give the same answers too.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a panic here is a failed test

use arrow_array::Array;
use proptest::prelude::*;
use weir::unstable::codec::arrow::{record_batch_to_batches, ArrowBuilder};
use weir::unstable::query::Query;
use weir::unstable::types::{Field, Schema, SchemaRef, Type};
use weir::unstable::value::{encode_row, Value};

/// A small random generator (xorshift), so that a case is its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const SCALARS: &[Type] = &[
    Type::Bool,
    Type::Count,
    Type::Int,
    Type::Double,
    Type::Time,
    Type::Interval,
    Type::String,
    Type::Enum,
    Type::Pattern,
    Type::File,
    Type::Addr,
    Type::Subnet,
    Type::Port,
];

const ADDRS: &[&str] = &[
    "10.0.0.9",
    "10.0.0.10",
    "192.168.1.1",
    "::ffff:192.168.1.1",
    "2001:db8::1",
    "::1",
    "0.0.0.0",
    "255.255.255.255",
    "::",
];

const SUBNETS: &[&str] = &[
    "10.0.0.0/8",
    "10.0.0.0/24",
    "192.168.0.0/16",
    "::ffff:10.0.0.0/104",
    "2001:db8::/32",
    "0.0.0.0/0",
    "::/0",
    "192.168.1.1/32",
];

const STRINGS: &[&[u8]] = &[
    b"",
    b"a",
    b"ab",
    b"Fa",
    b"ShADadFf",
    b"S",
    b"tcp",
    b"udp",
    b"\\xff",
    "\u{e9}t\u{e9}".as_bytes(),
];

/// Strings that are not UTF-8 (Arrow holds them escaped).
const INVALID: &[&[u8]] = &[b"\xff", b"a\xffb", b"\xe2\x82", b"\xc3"];

const COUNTS: &[u64] = &[0, 1, 5, 53, 80, 1000, 1001, 1 << 53, u64::MAX];
const INTS: &[i64] = &[-5, 0, 5, 1000, -1000, i64::MIN, i64::MAX];
const DOUBLES: &[f64] = &[
    0.0,
    -0.0,
    1.5,
    5.0,
    1000.0,
    -0.5,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    1e300,
];
const TIMES: &[i64] = &[
    0,
    1_258_531_221_500_000_000,
    1_258_531_221_500_000_001,
    1_258_531_221_499_999_999,
    -1,
    1_000_000_000,
];
/// Intervals Arrow's seconds hold exactly (whole microseconds, or below 10^6 s).
const INTERVALS: &[i64] = &[
    0,
    1_000,
    1_500_000,
    999_999_999,
    1_000_000_000,
    1_000_000_001,
    600_000_000_000,
    -1_000_000,
    631_152_000_000_000_000,
    86_400_000_000_001,
];
const PORTS: &[u64] = &[0, 53, 80, 443, 65535];

fn scalar_value(r: &mut Rng, ty: &Type, invalid_utf8: bool) -> Value {
    if r.chance(6) {
        return Value::Null;
    }
    match ty {
        Type::Bool => Value::Bool(r.chance(2)),
        Type::Count => Value::Count(*r.pick(COUNTS)),
        Type::Int => Value::Int(*r.pick(INTS)),
        Type::Double => Value::Double(*r.pick(DOUBLES)),
        Type::Time => Value::Time(*r.pick(TIMES)),
        Type::Interval => Value::Interval(*r.pick(INTERVALS)),
        Type::Addr => Value::Addr(r.pick(ADDRS).parse().unwrap()),
        Type::Subnet => {
            let (a, p) = r.pick(SUBNETS).split_once('/').unwrap();
            Value::Subnet(a.parse().unwrap(), p.parse().unwrap())
        }
        Type::Port => Value::Port(*r.pick(PORTS)),
        _ if invalid_utf8 && r.chance(4) => Value::String(r.pick(INVALID).to_vec()),
        _ => Value::String(r.pick(STRINGS).to_vec()),
    }
}

fn value(r: &mut Rng, ty: &Type, invalid_utf8: bool) -> Value {
    match ty.element() {
        Some(elem) => {
            if r.chance(6) {
                return Value::Null;
            }
            let n = r.below(4);
            Value::List(
                (0..n)
                    .map(|_| scalar_value(r, elem, invalid_utf8))
                    .collect(),
            )
        }
        None => scalar_value(r, ty, invalid_utf8),
    }
}

fn random_type(r: &mut Rng) -> Type {
    let scalar = r.pick(SCALARS).clone();
    match r.below(8) {
        0 => Type::Set(Box::new(scalar)),
        1 => Type::Vector(Box::new(scalar)),
        _ => scalar,
    }
}

fn random_schema(r: &mut Rng) -> SchemaRef {
    let mut fields = Vec::new();
    if r.chance(2) {
        fields.push(Field::new("ts", Type::Time));
    }
    if r.chance(2) {
        fields.push(Field::new("proto", Type::Enum));
    }
    for k in 0..1 + r.below(6) {
        // Shared suffixes: `x` names both `a.x` and `b.x`.
        let name = match r.below(4) {
            0 => "a.x".to_string(),
            1 => "b.x".to_string(),
            _ => format!("f{k}"),
        };
        if fields.iter().any(|f: &Field| f.name == name) {
            continue;
        }
        fields.push(Field::new(name, random_type(r)));
    }
    Schema::new(format!("zeek.s{}", r.below(3)), fields).into_shared()
}

fn escaped(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for b in bytes {
        out.push_str(&format!("\\x{b:02x}"));
    }
    out.push('"');
    out
}

fn scalar_literal(r: &mut Rng, invalid_utf8: bool) -> String {
    match r.below(11) {
        0 => r.pick(&["T", "F"]).to_string(),
        1 => r
            .pick(&[
                "0",
                "5",
                "53",
                "1000",
                "1k",
                "18446744073709551615",
                "9007199254740993",
            ])
            .to_string(),
        2 => r.pick(&["+5", "-5", "+0", "-1000", "+1000"]).to_string(),
        3 => r.pick(&["1.5", "5.0", "1000.0", "-0.5", "0.0"]).to_string(),
        4 => {
            let s = if invalid_utf8 && r.chance(3) {
                *r.pick(INVALID)
            } else {
                *r.pick(STRINGS)
            };
            escaped(s)
        }
        5 => r
            .pick(&["/a/", "/S.*/", "/.*/", "/b$/", "/[a-z]+/", "/F/", "/t.p/"])
            .to_string(),
        6 => r.pick(ADDRS).to_string(),
        7 => r.pick(SUBNETS).to_string(),
        8 => r
            .pick(&["53/udp", "80/tcp", "80/?", "443/tcp", "0/?", "65535/udp"])
            .to_string(),
        9 => r
            .pick(&[
                "1s",
                "0s",
                "1us",
                "1.5ms",
                "1000000001ns",
                "999999999ns",
                "600s",
                "10min",
                "7305d",
            ])
            .to_string(),
        _ => r
            .pick(&[
                "@1258531221.5",
                "@1258531221.500000001",
                "@0",
                "@1",
                "2009-11-18T08:00:21.5Z",
            ])
            .to_string(),
    }
}

fn literal(r: &mut Rng, invalid_utf8: bool) -> String {
    if r.chance(12) {
        // `== nil` (unset), `!= nil` (set); nothing else compares with it.
        return "nil".to_string();
    }
    if r.chance(6) {
        let items: Vec<String> = (0..r.below(4))
            .map(|_| scalar_literal(r, invalid_utf8))
            .collect();
        return format!("[{}]", items.join(", "));
    }
    scalar_literal(r, invalid_utf8)
}

const OPS: &[&str] = &[
    "==", "!=", "<", "<=", ">", ">=", "in", "!in", "ni", "!ni", "~", "!~",
];

fn extractor(r: &mut Rng, schema: &Schema) -> String {
    match r.below(10) {
        0 => r
            .pick(&[
                ":addr",
                ":subnet",
                ":count",
                ":int",
                ":real",
                ":string",
                ":bool",
                ":time",
                ":duration",
                ":port",
                ":enum",
                ":pattern",
                ":timestamp",
            ])
            .to_string(),
        1 => r
            .pick(&["#type", "#id", "#field", "#timestamp"])
            .to_string(),
        2 => "x".to_string(),
        _ => r.pick(&schema.fields).name.clone(),
    }
}

fn predicate(r: &mut Rng, schema: &Schema, invalid_utf8: bool) -> String {
    let lhs = extractor(r, schema);
    let op = r.pick(OPS);
    let lit = match lhs.as_str() {
        "#id" => r
            .pick(&["0", "5", "+7", "12", "[3, 9]", "1000"])
            .to_string(),
        "#type" => r
            .pick(&[
                "\"zeek.s1\"",
                "\"zeek\"",
                "/zeek.*/",
                "[\"zeek.s0\", \"x\"]",
            ])
            .to_string(),
        _ => literal(r, invalid_utf8),
    };
    if r.chance(4) {
        format!("{lit} {op} {lhs}")
    } else {
        format!("{lhs} {op} {lit}")
    }
}

fn expression(r: &mut Rng, schema: &Schema, depth: usize, invalid_utf8: bool) -> String {
    if depth == 0 {
        return predicate(r, schema, invalid_utf8);
    }
    match r.below(5) {
        0 => format!(
            "({} && {})",
            expression(r, schema, depth - 1, invalid_utf8),
            expression(r, schema, depth - 1, invalid_utf8)
        ),
        1 => format!(
            "({} || {})",
            expression(r, schema, depth - 1, invalid_utf8),
            expression(r, schema, depth - 1, invalid_utf8)
        ),
        2 => format!("!({})", expression(r, schema, depth - 1, invalid_utf8)),
        _ => predicate(r, schema, invalid_utf8),
    }
}

/// One random case: a schema, rows, expressions; returns how many (expression, row) answers
/// were compared and how many of them matched.
fn case(seed: u64) -> (usize, usize) {
    let mut r = Rng(seed | 1);
    let invalid_utf8 = r.chance(2);
    let schema = random_schema(&mut r);
    let n = r.below(80);
    let rows: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let values: Vec<Value> = schema
                .fields
                .iter()
                .map(|f| value(&mut r, &f.ty, invalid_utf8))
                .collect();
            let mut buf = Vec::new();
            encode_row(&values, &mut buf);
            buf
        })
        .collect();
    let mut builder = ArrowBuilder::new(schema.clone());
    for row in &rows {
        builder.append(row).unwrap();
    }
    let batch = builder.finish().unwrap();
    let back: Vec<Vec<u8>> = record_batch_to_batches(&batch, &schema, usize::MAX)
        .unwrap()
        .iter()
        .flat_map(|b| b.rows().map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect();
    assert_eq!(back.len(), n);
    let lossless = !invalid_utf8;
    let types: Vec<Type> = schema.fields.iter().map(|f| f.ty.clone()).collect();
    let first_id = r.below(10) as u64;
    let (mut compared, mut matched) = (0, 0);
    for _ in 0..24 {
        let text = expression(&mut r, &schema, 3, invalid_utf8);
        let Ok(q) = Query::parse_at(&text, 0) else {
            continue;
        };
        let p = q.bind(&schema);
        let got = p.evaluate_record_batch(&batch, Some(first_id)).unwrap();
        let unknown = p.evaluate_record_batch(&batch, None).unwrap();
        assert_eq!(got.len(), n);
        assert_eq!(got.null_count(), 0, "{text}");
        for i in 0..n {
            let id = first_id + i as u64;
            let want = p.matches_id(&back[i], id).unwrap();
            assert_eq!(
                got.value(i),
                want,
                "seed {seed}: `{text}` on row {i} of {schema:?}: {:?}",
                weir::unstable::value::decode_row(&back[i], &types).ok()
            );
            assert_eq!(unknown.value(i), p.matches(&back[i]).unwrap(), "{text}");
            if lossless {
                assert_eq!(
                    want,
                    p.matches_id(&rows[i], id).unwrap(),
                    "seed {seed}: `{text}` row {i}: the read-back row answers otherwise"
                );
            }
            compared += 1;
            matched += usize::from(want);
        }
    }
    (compared, matched)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arrow_evaluation_agrees_with_rows(seed in any::<u64>()) {
        case(seed);
    }
}

/// Across many cases, the expressions both match and miss rows (the comparison is not
/// vacuous).
#[test]
fn random_cases_match_some_rows_and_miss_others() {
    let (mut compared, mut matched) = (0, 0);
    for seed in 1..200u64 {
        let (c, m) = case(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        compared += c;
        matched += m;
    }
    assert!(compared > 50_000, "{compared}");
    assert!(matched * 50 > compared, "{matched} of {compared}");
    assert!(matched * 2 < compared, "{matched} of {compared}");
}

/// Addresses as addresses and values the reader cannot read: an error naming the field.
#[test]
fn unreadable_addresses_are_errors_naming_the_field() {
    use std::sync::Arc;
    let schema = Schema::new("zeek.x", vec![Field::new("id.orig_h", Type::Addr)]).into_shared();
    let text: arrow_array::ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
        Some("10.0.0.10"),
        None,
        Some("no address"),
    ]));
    let p = Query::parse("id.orig_h > 10.0.0.9").unwrap().bind(&schema);
    let e = p
        .evaluate_arrow(&[Some(text.clone())], 3, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("id.orig_h") && e.contains("no address") && e.contains("row 2"),
        "{e}"
    );
    let ok: arrow_array::ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
        Some("10.0.0.10"),
        None,
        Some("::ffff:10.0.0.8"),
    ]));
    let got = p.evaluate_arrow(&[Some(ok)], 3, None).unwrap();
    assert_eq!(
        got.iter().collect::<Vec<_>>(),
        [Some(true), Some(false), Some(false)]
    );
}

//! Nested JSON objects from dotted field names: how the JSON writer gives Suricata EVE events
//! their own shape back (`alert.signature_id` inside `"alert":{...}`).
//!
//! A [`Nest`] is built once per schema: the fields grouped by the parts of their names (split
//! at `.`), each group in the order its first field has in the schema, so that the fields of
//! one object are written together even when the schema lists them apart (a field a schema did
//! not know is appended after its fields). A field whose name is also the prefix of another's
//! (`a` and `a.b`, which JSON objects cannot hold both) is written flat under its full dotted
//! name, as is every part beyond [`MAX_NEST_DEPTH`]; either reads back to the same field.
//! [`Nest::write`] takes each set field's value as JSON text and writes the object; an object
//! none of whose fields is set is left out, as unset fields are.

use std::collections::HashMap;

/// Deepest nesting written; parts of a name beyond it stay one dotted key.
pub const MAX_NEST_DEPTH: usize = 16;

#[derive(Debug)]
enum Node {
    /// Field index.
    Leaf(usize),
    /// Members in order: key (JSON text with `:`), node.
    Object(Vec<(Vec<u8>, Node)>),
}

/// The object layout of one schema's fields. See the module docs.
#[derive(Debug)]
pub struct Nest {
    root: Vec<(Vec<u8>, Node)>,
}

/// A member's key as JSON text with its `:` (`"alert":`), from its name.
pub type KeyText<'a> = &'a dyn Fn(&str) -> Vec<u8>;

/// An object's members while building: by part, the leaf or the sub-object's builder.
#[derive(Default)]
struct Builder {
    order: Vec<String>,
    leaves: HashMap<String, usize>,
    objects: HashMap<String, Builder>,
}

impl Builder {
    fn add(&mut self, parts: &[&str], field: usize) {
        let (first, rest) = match parts {
            [] => return,
            [first, rest @ ..] => (first.to_string(), rest),
        };
        if !self.leaves.contains_key(&first) && !self.objects.contains_key(&first) {
            self.order.push(first.clone());
        }
        if rest.is_empty() {
            self.leaves.insert(first, field);
        } else {
            self.objects.entry(first).or_default().add(rest, field);
        }
    }

    /// The members, a name both a leaf and an object written flat (`prefix` the dotted path).
    fn build(self, prefix: &str, key: KeyText<'_>, out: &mut Vec<(Vec<u8>, Node)>) {
        let Builder {
            order,
            mut leaves,
            mut objects,
        } = self;
        for name in order {
            let full = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            let leaf = leaves.remove(&name);
            let object = objects.remove(&name);
            match (leaf, object) {
                (Some(i), None) => out.push((key(&name), Node::Leaf(i))),
                (None, Some(b)) => {
                    let mut members = Vec::new();
                    b.build(&full, key, &mut members);
                    out.push((key(&name), Node::Object(members)));
                }
                (Some(i), Some(b)) => {
                    // Both `a` and `a.b`: the leaf under its own name, the others flat.
                    out.push((key(&name), Node::Leaf(i)));
                    b.flat(&full, key, out);
                }
                (None, None) => {}
            }
        }
    }

    /// Every field below as a flat member named by its full dotted name.
    fn flat(self, prefix: &str, key: KeyText<'_>, out: &mut Vec<(Vec<u8>, Node)>) {
        let Builder {
            order,
            mut leaves,
            mut objects,
        } = self;
        for name in order {
            let full = format!("{prefix}.{name}");
            if let Some(i) = leaves.remove(&name) {
                out.push((key(&full), Node::Leaf(i)));
            }
            if let Some(b) = objects.remove(&name) {
                b.flat(&full, key, out);
            }
        }
    }
}

impl Nest {
    /// The layout of fields named `names` (in schema order); `key` spells a member's key.
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>, key: KeyText<'_>) -> Nest {
        let mut b = Builder::default();
        let mut parts = Vec::new();
        for (i, name) in names.into_iter().enumerate() {
            parts.clear();
            let mut rest = name;
            while parts.len() + 1 < MAX_NEST_DEPTH {
                match rest.split_once('.') {
                    Some((a, r)) if !a.is_empty() && !r.is_empty() => {
                        parts.push(a);
                        rest = r;
                    }
                    _ => break,
                }
            }
            parts.push(rest);
            b.add(&parts, i);
        }
        let mut root = Vec::new();
        b.build("", key, &mut root);
        Nest { root }
    }

    /// Writes the object: `value(i)` is field `i`'s JSON text, `None` when unset.
    pub fn write<'v>(&self, value: &dyn Fn(usize) -> Option<&'v [u8]>, out: &mut Vec<u8>) {
        write_members(&self.root, value, out);
    }
}

/// Writes `{...}` of `members`; false (and nothing written) when none is set.
fn write_members<'v>(
    members: &[(Vec<u8>, Node)],
    value: &dyn Fn(usize) -> Option<&'v [u8]>,
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    out.push(b'{');
    let mut any = false;
    for (k, node) in members {
        let at = out.len();
        if any {
            out.push(b',');
        }
        out.extend_from_slice(k);
        let set = match node {
            Node::Leaf(i) => match value(*i) {
                Some(v) => {
                    out.extend_from_slice(v);
                    true
                }
                None => false,
            },
            Node::Object(sub) => write_members(sub, value, out),
        };
        if set {
            any = true;
        } else {
            out.truncate(at);
        }
    }
    out.push(b'}');
    if !any && start > 0 {
        out.truncate(start);
    }
    any || start == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(names: &[&str], values: &[Option<&str>]) -> String {
        let key = |n: &str| format!("\"{n}\":").into_bytes();
        let nest = Nest::new(names.iter().copied(), &key);
        let mut out = Vec::new();
        nest.write(&|i| values[i].map(str::as_bytes), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dotted_names_nest_grouped_and_unset_objects_vanish() {
        let names = [
            "timestamp",
            "alert.sid",
            "alert.meta.x",
            "src_ip",
            "alert.extra",
        ];
        assert_eq!(
            write(
                &names,
                &[
                    Some("1"),
                    Some("2"),
                    Some("[\"a\"]"),
                    Some("\"ip\""),
                    Some("3")
                ]
            ),
            r#"{"timestamp":1,"alert":{"sid":2,"meta":{"x":["a"]},"extra":3},"src_ip":"ip"}"#
        );
        assert_eq!(
            write(&names, &[Some("1"), None, None, None, Some("3")]),
            r#"{"timestamp":1,"alert":{"extra":3}}"#
        );
        assert_eq!(write(&names, &[None; 5]), "{}");
    }

    #[test]
    fn a_leaf_that_is_also_a_prefix_stays_flat() {
        assert_eq!(
            write(
                &["a", "a.b", "a.c.d", ".x", "y."],
                &[Some("1"), Some("2"), Some("3"), Some("4"), Some("5")]
            ),
            r#"{"a":1,"a.b":2,"a.c.d":3,".x":4,"y.":5}"#
        );
        let deep = vec!["p"; MAX_NEST_DEPTH + 3].join(".");
        let out = write(&[deep.as_str()], &[Some("1")]);
        assert_eq!(out.matches('{').count(), MAX_NEST_DEPTH);
        assert!(out.contains("\"p.p.p.p\":1"), "{out}");
    }
}

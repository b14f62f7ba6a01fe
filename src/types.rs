//! The data model: Zeek types, fields and schemas.
//!
//! A [`Schema`] is a name (`zeek.<#path>`, e.g. `zeek.conn`, or `suricata.<event_type>` for
//! Suricata's EVE events) plus ordered [`Field`]s, each with
//! its Zeek field name (dots kept, e.g. `id.orig_h`) and a [`Type`]. Every batch of events shares
//! one schema; schemas are shared through [`Arc`] and compared by value.

use std::fmt;
use std::sync::Arc;

/// How deep containers nest in a [`Type`]: 1, a `set`, `vector` or `table` of a scalar, as
/// Zeek logs them. This is the one place the limit is stated; [`Type::parse`], through which
/// every reader of types goes (Zeek TSV headers, the WAL, segments), refuses deeper names
/// without recursion, and nothing else builds deeper types, so code walking a `Type`
/// recursively is bounded by it.
pub const MAX_TYPE_DEPTH: usize = 1;

/// The event time's field in a schema: `ts`, as in every Zeek log.
pub const TIME_FIELD: &str = "ts";
/// The event time's field in a Suricata EVE schema: `timestamp`.
pub const EVE_TIME_FIELD: &str = "timestamp";
/// How the names of Suricata EVE schemas begin (`suricata.alert`).
pub const EVE_SCHEMA_PREFIX: &str = "suricata.";
/// The field of a flow's Community ID, in Zeek (`conn`, the `community-id` package's name, and
/// what weir computes at import: `codec/zeek/conn_community_id.rs`) as in Suricata EVE.
pub const COMMUNITY_ID_FIELD: &str = "community_id";

/// A Zeek type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Type {
    /// `bool`: `T` or `F`.
    Bool,
    /// `count`: unsigned 64-bit integer.
    Count,
    /// `int`: signed 64-bit integer.
    Int,
    /// `double`: 64-bit float.
    Double,
    /// `time`: nanoseconds since the Unix epoch.
    Time,
    /// `interval`: a duration in nanoseconds.
    Interval,
    /// `string`: bytes, not necessarily UTF-8.
    String,
    /// `addr`: an IPv4 or IPv6 address.
    Addr,
    /// `subnet`: an address and a prefix length.
    Subnet,
    /// `port`: a transport-layer port number.
    Port,
    /// `enum`: an identifier such as `udp`.
    Enum,
    /// `pattern`: a regular expression, kept as text.
    Pattern,
    /// `file`: a file name, kept as text.
    File,
    /// `set[T]`.
    Set(Box<Type>),
    /// `vector[T]`.
    Vector(Box<Type>),
    /// `table[T]`: Bro 2.x wrote sets this way.
    Table(Box<Type>),
}

impl Type {
    /// Parses a Zeek type name such as `count` or `vector[interval]`.
    ///
    /// Returns `None` for a name weir does not know; readers treat such a column as a string.
    /// Containers nest at most [`MAX_TYPE_DEPTH`] deep; a deeper name is unknown. Parsing does
    /// not recurse, so a name nested any number of times (from a log, the WAL or a segment)
    /// costs no stack.
    pub fn parse(name: &str) -> Option<Type> {
        let name = name.trim();
        let Some(open) = name.find('[') else {
            return Type::parse_scalar(name);
        };
        // MAX_TYPE_DEPTH is 1: the element of a container is a scalar.
        let inner = Type::parse_scalar(name.strip_suffix(']')?.get(open + 1..)?.trim())?;
        let inner = Box::new(inner);
        match &name[..open] {
            "set" => Some(Type::Set(inner)),
            "vector" => Some(Type::Vector(inner)),
            "table" => Some(Type::Table(inner)),
            _ => None,
        }
    }

    /// Parses the name of a type that is not a container.
    fn parse_scalar(name: &str) -> Option<Type> {
        Some(match name {
            "bool" => Type::Bool,
            "count" => Type::Count,
            "int" => Type::Int,
            "double" => Type::Double,
            "time" => Type::Time,
            "interval" => Type::Interval,
            "string" => Type::String,
            "addr" => Type::Addr,
            "subnet" => Type::Subnet,
            "port" => Type::Port,
            "enum" => Type::Enum,
            "pattern" => Type::Pattern,
            "file" => Type::File,
            _ => return None,
        })
    }

    /// The element type of a container, `None` for a scalar.
    pub fn element(&self) -> Option<&Type> {
        match self {
            Type::Set(t) | Type::Vector(t) | Type::Table(t) => Some(t),
            _ => None,
        }
    }

    /// Whether this is `set`, `vector` or `table`.
    pub fn is_container(&self) -> bool {
        self.element().is_some()
    }

    /// Whether values of this type are byte strings (`string`, `enum`, `pattern`, `file`).
    pub fn is_stringy(&self) -> bool {
        matches!(self, Type::String | Type::Enum | Type::Pattern | Type::File)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Type::Bool => "bool",
            Type::Count => "count",
            Type::Int => "int",
            Type::Double => "double",
            Type::Time => "time",
            Type::Interval => "interval",
            Type::String => "string",
            Type::Addr => "addr",
            Type::Subnet => "subnet",
            Type::Port => "port",
            Type::Enum => "enum",
            Type::Pattern => "pattern",
            Type::File => "file",
            Type::Set(t) => return write!(f, "set[{t}]"),
            Type::Vector(t) => return write!(f, "vector[{t}]"),
            Type::Table(t) => return write!(f, "table[{t}]"),
        };
        f.write_str(s)
    }
}

/// One column of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// The Zeek field name, dots kept (`id.orig_h`).
    pub name: String,
    /// The field's type.
    pub ty: Type,
}

impl Field {
    /// A field with the given name and type.
    pub fn new(name: impl Into<String>, ty: Type) -> Field {
        Field {
            name: name.into(),
            ty,
        }
    }
}

/// The layout shared by all events of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schema {
    /// `zeek.<path>`, e.g. `zeek.conn`.
    pub name: String,
    /// Ordered columns.
    pub fields: Vec<Field>,
}

impl Schema {
    /// A schema from a name and fields.
    pub fn new(name: impl Into<String>, fields: Vec<Field>) -> Schema {
        Schema {
            name: name.into(),
            fields,
        }
    }

    /// The Zeek `#path` of this schema: the name without its `zeek.` prefix.
    pub fn path(&self) -> &str {
        self.name.strip_prefix("zeek.").unwrap_or(&self.name)
    }

    /// The name of the field that holds the event time: [`EVE_TIME_FIELD`] in a Suricata EVE
    /// schema (named `suricata.<event_type>`), else [`TIME_FIELD`].
    pub fn time_field(&self) -> &'static str {
        if self.name.starts_with(EVE_SCHEMA_PREFIX) {
            EVE_TIME_FIELD
        } else {
            TIME_FIELD
        }
    }

    /// Index of the field that holds the event time: the first field named
    /// [`Self::time_field`] (`ts`; `timestamp` in EVE schemas) of type `time`. Time pruning,
    /// `info`, retention, histograms, explore and the lake's `day=` partitions all go by it.
    pub fn ts_index(&self) -> Option<usize> {
        let name = self.time_field();
        self.fields
            .iter()
            .position(|f| f.name == name && f.ty == Type::Time)
    }

    /// Wraps the schema for sharing between batches.
    pub fn into_shared(self) -> SchemaRef {
        Arc::new(self)
    }
}

/// A shared schema.
pub type SchemaRef = Arc<Schema>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_every_type_name() {
        for name in [
            "bool",
            "count",
            "int",
            "double",
            "time",
            "interval",
            "string",
            "addr",
            "subnet",
            "port",
            "enum",
            "pattern",
            "file",
            "set[addr]",
            "vector[interval]",
            "table[string]",
        ] {
            let ty = Type::parse(name).unwrap_or_else(|| panic!("{name} did not parse"));
            assert_eq!(ty.to_string(), name);
        }
    }

    #[test]
    fn rejects_unknown_and_nested_types() {
        assert_eq!(Type::parse("func"), None);
        assert_eq!(Type::parse("vector[vector[count]]"), None);
        assert_eq!(Type::parse("set[nope]"), None);
        assert_eq!(Type::parse("vector[count"), None);
        assert_eq!(
            Type::parse("vector[ count ]"),
            Some(Type::Vector(Box::new(Type::Count)))
        );
    }

    /// A name nested far deeper than the stack could recurse is refused, not a crash.
    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let n = 1_000_000;
        let name = format!("{}count{}", "vector[".repeat(n), "]".repeat(n));
        assert_eq!(Type::parse(&name), None);
    }

    #[test]
    fn ts_index_needs_name_and_type() {
        let s = Schema::new(
            "zeek.x",
            vec![Field::new("ts", Type::String), Field::new("ts", Type::Time)],
        );
        assert_eq!(s.ts_index(), Some(1));
        assert_eq!(s.path(), "x");
        let fields = vec![
            Field::new("ts", Type::Time),
            Field::new("timestamp", Type::Time),
        ];
        let eve = Schema::new("suricata.alert", fields.clone());
        assert_eq!(eve.ts_index(), Some(1));
        assert_eq!(Schema::new("zeek.alert", fields).ts_index(), Some(0));
    }
}

#!/usr/bin/env python3
"""Writes weir's Suricata EVE schema files from Suricata's own JSON Schema of EVE.

    python3 scripts/eve-schemas.py [--schema PATH] [--out DIR] [--list FILE]

reads `schema.json` (default: ../shared/data/suricata/schema.json, Suricata 8's `etc/schema.json`)
and writes one weir schema file per event type into DIR (default `schemas/suricata/`), plus the
Rust list that embeds them (default `src/codec/suricata/shipped.rs`). The output is committed;
`tests/it/suricata_eve.rs` checks that it equals what this script makes from ../shared when that
is present. The schema file format is documented in `src/codec/zeek/schema.rs`.

What a schema holds, for event type T (`suricata.T`):
- the common fields: every top-level property of schema.json that is not an object (`timestamp`,
  `flow_id`, `src_ip`, ...), in schema.json's order, `timestamp` first;
- the properties of the object `T` (and of the objects in EXTRA_OBJECTS[T]), nested objects
  flattened to dotted names (`alert.signature_id`, `flow.bytes_toserver`).

Types (weir's, Zeek's names):
- string: `time` for `timestamp`, `flow.start`/`flow.end`, `netflow.start`/`netflow.end` and
  every string with a date pattern (TLS validity dates); `addr` for names ending in `_ip`;
  else `string`;
- integer: `port` for names ending in `port`; else `count` (counters, IDs: `flow_id` is an
  unsigned 64-bit count);
- number: `double` (but `vlan`, a list of VLAN IDs: `vector[count]`); boolean: `bool`;
- array of scalars: `vector[T]` of the element's type; array of objects (`dns.answers`,
  `dns.queries`): `vector[string]`, each element its JSON text (weir's types nest one level);
- an object without declared properties, or with several or unknown types: left out, so that
  the reader keeps its fields, typed by inference.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Event types weir ships a schema for: the object of that name in schema.json holds its fields.
EVENT_TYPES = [
    "alert", "anomaly", "arp", "bittorrent_dht", "dcerpc", "dhcp", "dnp3", "dns", "drop",
    "enip", "fileinfo", "flow", "frame", "ftp", "ftp_data", "http", "http2", "ike", "krb5",
    "ldap", "llmnr", "mdns", "modbus", "mqtt", "netflow", "nfs", "pgsql", "pop3", "quic", "rdp",
    "rfb", "sip", "smb", "smtp", "snmp", "ssh", "stats", "tftp", "tls", "websocket",
]

# The objects of an event type besides its own (Suricata writes them into the same event).
EXTRA_OBJECTS = {
    "alert": ["flow", "verdict"],
    "drop": ["verdict"],
    "flow": ["tcp"],
    "netflow": ["tcp"],
    "nfs": ["rpc"],
    "smtp": ["email"],
}

# Event types whose fields Suricata writes into another type's object: HTTP/2 transactions are
# logged in `http` (with `http.http2`).
OBJECT_OF = {"http2": "http"}

# Fields of older layouts that schema.json (Suricata 8) no longer lists: DNS version 1 logs one
# event per answer with `rdata` and `ttl`.
LEGACY_FIELDS = {
    "dns": [("dns.rdata", "string"), ("dns.ttl", "count")],
}

# Common top-level properties left out: objects of their own event types or lists of objects.
COMMON_SKIP = {"files"}

TIME_FIELDS = {"timestamp", "flow.start", "flow.end", "netflow.start", "netflow.end"}


def resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/$defs/"), ref
        node = schema["$defs"][ref[len("#/$defs/"):]]
    return node


def scalar_type(name, node):
    """weir's type of a scalar property, or None when it has none (several types)."""
    t = node.get("type")
    if t == "string":
        if name in TIME_FIELDS or "pattern" in node:
            return "time"
        if name.endswith("_ip"):
            return "addr"
        return "string"
    if t == "integer":
        return "port" if name.endswith("port") else "count"
    if t == "number":
        return "double"
    if t == "boolean":
        return "bool"
    return None


def flatten(schema, name, node, out):
    node = resolve(schema, node)
    t = node.get("type")
    if t == "object":
        for key, sub in node.get("properties", {}).items():
            flatten(schema, f"{name}.{key}" if name else key, sub, out)
        return
    if t == "array":
        items = resolve(schema, node.get("items", {}))
        it = items.get("type")
        if name == "vlan":
            out.append((name, "vector[count]"))
        elif it in ("object", "array"):
            out.append((name, "vector[string]"))
        else:
            inner = scalar_type(name, items)
            out.append((name, f"vector[{inner or 'string'}]"))
        return
    ty = scalar_type(name, node)
    if ty is not None:
        out.append((name, ty))


def common_fields(schema):
    out = [("timestamp", "time")]
    for key, node in schema["properties"].items():
        node = resolve(schema, node)
        if key == "timestamp" or key in COMMON_SKIP or node.get("type") == "object":
            continue
        if node.get("type") is None:
            continue
        flatten(schema, key, node, out)
    return out


def event_fields(schema, event_type):
    out = common_fields(schema)
    for obj in [OBJECT_OF.get(event_type, event_type)] + EXTRA_OBJECTS.get(event_type, []):
        node = schema["properties"].get(obj)
        if node is None:
            sys.exit(f"schema.json has no object {obj!r} (event type {event_type})")
        flatten(schema, obj, node, out)
    out.extend(LEGACY_FIELDS.get(event_type, []))
    seen = set()
    for name, _ in out:
        if name in seen:
            sys.exit(f"{event_type}: field {name!r} twice")
        seen.add(name)
    return out


def schema_file(event_type, fields):
    lines = [
        f"# Suricata EVE events of type \"{event_type}\": the common fields, then the",
        f"# \"{OBJECT_OF.get(event_type, event_type)}\" object flattened, from Suricata 8's etc/schema.json.",
        "# Generated by scripts/eve-schemas.py: do not edit. A weir schema file, format 1",
        "# (documented in src/codec/zeek/schema.rs).",
        "format = 1",
        'namespace = "suricata"',
        f'path = "{event_type}"',
        "fields = [",
    ]
    width = max(len(json.dumps(n)) for n, _ in fields) + 1
    for name, ty in fields:
        q = json.dumps(name) + ","
        lines.append(f"  [{q.ljust(width)} {json.dumps(ty)}],")
    lines.append("]")
    return "\n".join(lines) + "\n"


def shipped_rs(names):
    lines = [
        "//! The shipped Suricata EVE schema files, embedded (generated by `scripts/eve-schemas.py`:",
        "//! do not edit).",
        "",
        "/// The shipped EVE schema files: (file name, text).",
        "#[rustfmt::skip]",
        "pub(crate) const BUILTIN: &[(&str, &str)] = &[",
    ]
    for n in names:
        lines.append(f'    ("{n}", include_str!("../../../schemas/suricata/{n}")),')
    lines.append("];")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schema", default=os.path.join(ROOT, "..", "shared", "data", "suricata", "schema.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "schemas", "suricata"))
    ap.add_argument("--list", default=os.path.join(ROOT, "src", "codec", "suricata", "shipped.rs"))
    args = ap.parse_args()
    with open(args.schema) as f:
        schema = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    names = []
    for t in EVENT_TYPES:
        name = f"{t}.toml"
        with open(os.path.join(args.out, name), "w") as f:
            f.write(schema_file(t, event_fields(schema, t)))
        names.append(name)
    os.makedirs(os.path.dirname(args.list), exist_ok=True)
    with open(args.list, "w") as f:
        f.write(shipped_rs(names))


if __name__ == "__main__":
    main()

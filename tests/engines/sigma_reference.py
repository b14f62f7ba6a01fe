#!/usr/bin/env python3
"""Events for a Sigma rule and pySigma's verdict on them (tests/it/sigma.rs).

Usage: sigma_reference.py RULE.yml OUTDIR

From the rule's own values, writes OUTDIR/<service>.log, a Zeek TSV log of events the rule
matches and near-misses it must not match (each value as is, in another case, with one
character changed, cut short, inside other text; numbers one off; addresses just inside and
outside each network; unset fields), then converts the rule with pySigma's SQLite backend
and runs the SQL over a table of the same events (text columns COLLATE NOCASE: Sigma's
strings compare case-insensitively). Prints one JSON object: {"status": "ok", "events": N,
"matches": [uid, ...], "sql": ...}, or {"status": "refused", "error": ...} when pySigma
cannot convert the rule.

The only field mapping is weir's documented one for Zeek's http log (the web taxonomy's
c-uri, c-useragent, ... to uri, user_agent, ...), applied here as a pySigma pipeline.
"""
import ipaddress
import json
import os
import random
import sqlite3
import sys

import yaml
from sigma.backends.sqlite import sqliteBackend
from sigma.collection import SigmaCollection
from sigma.processing.pipeline import ProcessingItem, ProcessingPipeline
from sigma.processing.transformations import FieldMappingTransformation

HTTP_FIELDS = {
    "c-uri": "uri",
    "c-useragent": "user_agent",
    "cs-method": "method",
    "cs-host": "host",
    "cs-referrer": "referrer",
    "sc-status": "status_code",
}

# Zeek's types of the fields the rules name (string when not listed).
TYPES = {
    "id.orig_h": "addr",
    "id.resp_h": "addr",
    "id.orig_p": "port",
    "id.resp_p": "port",
    "Z": "count",
    "answers": "vector[string]",
    "resp_mime_types": "vector[string]",
    "rejected": "bool",
}


def pieces(s):
    """A Sigma string as pySigma reads it: (literal text, wildcard) pieces."""
    out, lit, i = [], "", 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s) and s[i + 1] in "*?\\":
            lit += s[i + 1]
            i += 2
            continue
        if c in "*?":
            if lit:
                out.append(lit)
                lit = ""
            out.append(c)
        else:
            lit += c
        i += 1
    if lit:
        out.append(lit)
    return out


def fill(ps, star="", one="Q"):
    return "".join(star if p == "*" else one if p == "?" else p for p in ps)


def near(s, rng):
    """The same text with one character changed."""
    if not s:
        return "x"
    i = rng.randrange(len(s))
    c = s[i]
    r = "#" if c != "#" else "%"
    return s[:i] + r + s[i + 1:]


def string_variants(value, mods, rng):
    ps = pieces(str(value))
    core = fill(ps)
    alt = fill(ps, star="Wild", one="z")
    if "contains" in mods:
        hits = ["aa" + core + "zz", core]
    elif "startswith" in mods:
        hits = [core + "zz", core]
    elif "endswith" in mods:
        hits = ["aa" + core, core]
    else:
        hits = [core, alt]
    out = []
    for h in hits:
        out += [h, h.swapcase(), near(h, rng), h[:-1], h + "x", "x" + h]
    return out


def net_variants(net):
    n = ipaddress.ip_network(net, strict=False)
    out = [str(n.network_address + 1) if n.num_addresses > 1 else str(n.network_address)]
    try:
        out.append(str(n.broadcast_address + 1))
    except ValueError:
        pass
    try:
        out.append(str(n.network_address - 1))
    except ValueError:
        pass
    return out


def number_variants(v):
    v = int(v)
    return [str(v), str(v + 1), str(max(v - 1, 0)), "0"]


def candidates(detection, service, rng):
    """Per field: the values an event may take, from the rule's own values."""
    pool = {}
    for name, d in detection.items():
        if name == "condition":
            continue
        maps = d if isinstance(d, list) else [d]
        for m in maps:
            if not isinstance(m, dict):
                continue
            for key, values in m.items():
                field, *mods = key.split("|")
                if service == "http":
                    field = HTTP_FIELDS.get(field, field)
                vals = values if isinstance(values, list) else [values]
                ty = TYPES.get(field, "string")
                got = pool.setdefault(field, [])
                if "all" in mods:
                    cores = [fill(pieces(str(v))) for v in vals]
                    got += ["aa" + "_".join(cores) + "zz", "_".join(reversed(cores))]
                for v in vals:
                    if v is None:
                        continue
                    if "cidr" in mods:
                        got += net_variants(v)
                    elif ty in ("count", "port"):
                        got += number_variants(v)
                    elif ty == "bool":
                        got += ["T", "F"]
                    else:
                        got += string_variants(v, mods, rng)
    return pool


def neutral(field):
    ty = TYPES.get(field, "string")
    return {"addr": "203.0.113.9", "port": "4444", "count": "7", "bool": "F"}.get(ty, "neutral")


def tsv_escape(s):
    out = []
    for ch in s:
        if ch.isalnum() or ch in "._:/$@#%-+=":
            out.append(ch)
        else:
            out.append("".join("\\x%02x" % b for b in ch.encode()))
    text = "".join(out)
    return "\\x2d" if text == "-" else text


def main():
    rule_path, outdir = sys.argv[1], sys.argv[2]
    text = open(rule_path, encoding="utf-8").read()
    rule = yaml.safe_load(text)
    service = rule["logsource"]["service"]
    rng = random.Random(os.path.basename(rule_path))
    detection = rule["detection"]
    pool = candidates(detection, service, rng)
    base = ["id.orig_h", "id.orig_p", "id.resp_h", "id.resp_p"]
    fields = base + [f for f in pool if f not in base]
    for f in fields:
        pool.setdefault(f, [])
        pool[f] = pool[f] + [None, neutral(f)]

    events = []
    # Each value of each field once, the others neutral or unset.
    for f in fields:
        for v in pool[f]:
            events.append({g: (v if g == f else rng.choice([None, neutral(g)])) for g in fields})
    # Random combinations, leaning on the rule's values.
    for _ in range(400):
        events.append({f: rng.choice(pool[f]) for f in fields})
    # Every detection's own first values together (matches), and each near-missed.
    for name, d in detection.items():
        maps = d if isinstance(d, list) else [d]
        for m in maps:
            if not isinstance(m, dict):
                continue
            ev = {f: neutral(f) for f in fields}
            parts = {}
            for key, values in m.items():
                field, *mods = key.split("|")
                if service == "http":
                    field = HTTP_FIELDS.get(field, field)
                if pool[field][:-2]:
                    ev[field] = pool[field][0]
                first = values[0] if isinstance(values, list) else values
                if TYPES.get(field, "string") == "string" and first is not None and "cidr" not in mods:
                    cores = [fill(pieces(str(v))) for v in (values if "all" in mods else [first])]
                    slot = 0 if "startswith" in mods else 2 if "endswith" in mods else 1
                    parts.setdefault(field, [[], [], []])[slot] += cores
            # A field with several conditions in one detection: one value meeting them all.
            for field, (pre, mid, suf) in parts.items():
                if len(pre) + len(mid) + len(suf) > 1:
                    ev[field] = "".join(pre) + "m" + "_".join(mid) + "m" + "".join(suf)
            events.append(ev)
            for f in list(ev):
                miss = dict(ev)
                miss[f] = pool[f][2] if len(pool[f]) > 4 else None
                events.append(miss)

    # The log.
    types = ["time", "string"] + [TYPES.get(f, "string") for f in fields]
    path = os.path.join(outdir, f"{service}.log")
    with open(path, "w", encoding="utf-8") as out:
        out.write("#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n")
        out.write(f"#path\t{service}\n")
        out.write("#fields\tts\tuid\t" + "\t".join(fields) + "\n")
        out.write("#types\t" + "\t".join(types) + "\n")
        for i, ev in enumerate(events):
            row = [f"{1600000000 + i}.000000", f"R{i}"]
            for f in fields:
                v = ev[f]
                row.append("-" if v is None else tsv_escape(v) if TYPES.get(f, "string") in ("string", "vector[string]") else v)
            out.write("\t".join(row) + "\n")

    # pySigma's verdict over the same events.
    pipeline = ProcessingPipeline(
        items=[ProcessingItem(FieldMappingTransformation(HTTP_FIELDS))] if service == "http" else []
    )
    try:
        sql = sqliteBackend(processing_pipeline=pipeline).convert(SigmaCollection.from_yaml(text))
    except Exception as e:  # pySigma refuses the rule
        print(json.dumps({"status": "refused", "error": f"{type(e).__name__}: {e}"}))
        return
    assert len(sql) == 1, sql
    db = sqlite3.connect(":memory:")

    def coltype(f):
        ty = TYPES.get(f, "string")
        return "INTEGER" if ty in ("count", "port") else "TEXT COLLATE NOCASE" if ty in ("string", "vector[string]") else "TEXT"

    cols = ", ".join(f'"{f}" {coltype(f)}' for f in ["uid"] + fields)
    db.execute(f"CREATE TABLE logs ({cols})")
    for i, ev in enumerate(events):
        vals = [f"R{i}"]
        for f in fields:
            v = ev[f]
            ty = TYPES.get(f, "string")
            if v is not None and ty in ("count", "port"):
                v = int(v)
            elif v is not None and ty == "bool":
                v = "true" if v == "T" else "false"
            vals.append(v)
        db.execute(f"INSERT INTO logs VALUES ({', '.join('?' * len(vals))})", vals)
    query = sql[0].replace("SELECT * FROM logs", "SELECT uid FROM logs", 1)
    matches = [r[0] for r in db.execute(query)]
    print(json.dumps({"status": "ok", "events": len(events), "matches": matches, "sql": query}))


if __name__ == "__main__":
    main()

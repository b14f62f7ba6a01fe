#!/usr/bin/env python3
"""Reads weir's Parquet lake (and Arrow IPC output) with real engines, pyarrow and DuckDB, and
checks them against what weir's archive holds (tests/it/lake_engines.rs computes it).

usage: check_lake.py EXPECTED.json LAKE_DIR [ARROW_FILE]

EXPECTED.json: {schema: {"rows": n, "columns": {name: stats}, "sample": {"date": d,
"values": {name: value}}}}, stats per column: "nonnull", and by type "min"/"max" (numbers,
times and intervals as integer nanoseconds (the lake holds intervals as float64 seconds: read
back as weir does, from the shortest decimal of the double), strings, addresses and subnets as text), "sum"
(count, int, port; decimal text, it may pass 2^64), "true" (bool), "distinct" (string-like), "elements" (containers).
Prints every mismatch and exits 1 if there is any.
"""
import json
import math
import sys
from decimal import ROUND_HALF_EVEN, Decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

STRINGY = {"string", "enum", "pattern", "file", "addr", "subnet"}
INTEGRAL = {"count", "int", "port"}

problems = []


def seconds_ns(v):
    """Interval seconds (a float) as nanoseconds, as weir reads them: exact from the shortest decimal."""
    if v is None:
        return None
    return int((Decimal(repr(v)) * 10**9).to_integral_value(rounding=ROUND_HALF_EVEN))


def check(what, got, want):
    if isinstance(want, float) and isinstance(got, float) and math.isnan(want) and math.isnan(got):
        return
    if got != want:
        problems.append(f"{what}: got {got!r}, want {want!r}")


def arrow_stats(col, zt):
    """The stats of one column (a pyarrow ChunkedArray) of Zeek type `zt`."""
    s = {"nonnull": len(col) - col.null_count}
    if zt.startswith(("set[", "vector[", "table[")):
        s["elements"] = int(pc.sum(pc.list_value_length(col)).as_py() or 0)
        return s
    if zt == "bool":
        s["true"] = int(pc.sum(pc.cast(col, pa.int64())).as_py() or 0)
        return s
    if zt == "time":
        ints = pc.cast(col, pa.int64())
        mm = pc.min_max(ints)
        s["min"], s["max"] = mm["min"].as_py(), mm["max"].as_py()
        return s
    if zt == "interval":
        if not pa.types.is_floating(col.type):
            problems.append(f"interval column of type {col.type}, want float64 seconds")
        mm = pc.min_max(col)
        s["min"], s["max"] = seconds_ns(mm["min"].as_py()), seconds_ns(mm["max"].as_py())
        return s
    mm = pc.min_max(col)
    s["min"], s["max"] = mm["min"].as_py(), mm["max"].as_py()
    if zt in INTEGRAL:
        s["sum"] = str(sum(v for v in col.to_pylist() if v is not None))
    if zt in STRINGY:
        s["distinct"] = len(set(v for v in col.to_pylist() if v is not None))
    return s


def compare_stats(where, got, want):
    for k, w in want.items():
        check(f"{where} {k}", got.get(k), w)


def check_pyarrow(expected, lake):
    dataset = ds.dataset(lake, format="parquet", partitioning="hive")
    # Rows per schema through the Hive partition column.
    counts = dataset.to_table(columns=["schema"]).group_by("schema").aggregate([([], "count_all")])
    got = {r["schema"]: r["count_all"] for r in counts.to_pylist()}
    check("pyarrow rows per schema", got, {s: e["rows"] for s, e in expected.items()})
    for schema, e in expected.items():
        files = sorted(str(p) for p in dataset.files if f"schema={schema}/" in p)
        table = pa.concat_tables(pq.read_table(f) for f in files) if files else None
        if table is None:
            problems.append(f"pyarrow {schema}: no files")
            continue
        for name, want in e["columns"].items():
            field = table.schema.field(name)
            zt = field.metadata[b"zeek.type"].decode()
            check(f"pyarrow {schema}.{name} zeek.type", zt, want["type"])
            compare_stats(f"pyarrow {schema}.{name}", arrow_stats(table.column(name), zt), want["stats"])
        check(f"pyarrow {schema} zeek.schema", table.schema.metadata.get(b"zeek.schema", b"").decode(), schema)
        # The sample: the first event of the schema is the first row of its day's first file.
        first = pq.read_table(f"{lake}/schema={schema}/day={e['sample']['date']}/part-00000.parquet").slice(0, 1)
        for name, want in e["sample"]["values"].items():
            zt = e["columns"][name]["type"]
            column = first.column(name)
            if zt == "time":
                column = pc.cast(column, pa.int64())
            got = column[0].as_py()
            if zt == "interval":
                got = seconds_ns(got)
            check(f"pyarrow sample {schema}.{name}", got, want)


def check_duckdb(expected, lake):
    con = duckdb.connect()
    src = f"read_parquet('{lake}/**/*.parquet', hive_partitioning = true, union_by_name = true)"
    rows = dict(con.execute(f"select schema, count(*) from {src} group by schema").fetchall())
    check("duckdb rows per schema", rows, {s: e["rows"] for s, e in expected.items()})
    for schema, e in expected.items():
        one = f"read_parquet('{lake}/schema={schema}/**/*.parquet')"
        for name, want in e["columns"].items():
            col = '"' + name.replace('"', '""') + '"'
            zt = want["type"]
            exprs = {"nonnull": f"count({col})"}
            if zt.startswith(("set[", "vector[", "table[")):
                exprs["elements"] = f"coalesce(sum(len({col})), 0)"
            elif zt == "bool":
                exprs["true"] = f"count(*) filter (where {col})"
            elif zt == "time":
                exprs["min"], exprs["max"] = f"epoch_ns(min({col}))", f"epoch_ns(max({col}))"
            elif zt == "interval":
                # Seconds as DOUBLE: compared in Python as nanoseconds, as weir reads them.
                exprs["min"], exprs["max"] = f"min({col})", f"max({col})"
            else:
                exprs["min"], exprs["max"] = f"min({col})", f"max({col})"
                if zt in INTEGRAL:
                    exprs["sum"] = f"coalesce(sum({col}), 0)::hugeint"
                if zt in STRINGY:
                    exprs["distinct"] = f"count(distinct {col})"
            keys = list(exprs)
            vals = con.execute(f"select {', '.join(exprs[k] for k in keys)} from {one}").fetchone()
            got = {k: (str(int(v)) if k == "sum" and v is not None else v) for k, v in zip(keys, vals)}
            if zt == "interval":
                got["min"], got["max"] = seconds_ns(got["min"]), seconds_ns(got["max"])
            compare_stats(f"duckdb {schema}.{name}", got, want["stats"])


def check_arrow(expected, path):
    """Arrow IPC streams, one after another, as `weir export --to arrow` writes them."""
    per_schema = {}
    with open(path, "rb") as f:
        while f.peek(1):
            reader = pa.ipc.open_stream(f)
            name = reader.schema.metadata[b"zeek.schema"].decode()
            table = reader.read_all()
            per_schema.setdefault(name, []).append(table)
    got = {s: sum(t.num_rows for t in ts) for s, ts in per_schema.items()}
    check("arrow rows per schema", got, {s: e["rows"] for s, e in expected.items()})
    for schema, tables in per_schema.items():
        table = pa.concat_tables(tables)
        for name, want in expected[schema]["columns"].items():
            compare_stats(f"arrow {schema}.{name}", arrow_stats(table.column(name), want["type"]), want["stats"])
        # DuckDB queries the Arrow table in place.
        con = duckdb.connect()
        con.register("events", table)
        n = con.execute("select count(*) from events").fetchone()[0]
        check(f"duckdb on arrow {schema} rows", n, expected[schema]["rows"])


def main():
    expected = json.load(open(sys.argv[1]))
    lake = sys.argv[2]
    check_pyarrow(expected, lake)
    check_duckdb(expected, lake)
    if len(sys.argv) > 3:
        check_arrow(expected, sys.argv[3])
    for p in problems:
        print(p)
    checked = sum(len(e["columns"]) for e in expected.values())
    print(f"checked {len(expected)} schemas, {checked} columns: {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

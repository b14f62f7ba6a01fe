#!/usr/bin/env python3
"""Loads weir's Parquet lake with DuckDB, Polars, DataFusion and pyarrow, each partition on its
own and the whole lake, with the calls the guide shows (docs/book/src/lake/index.md), and checks five answers against what
weir's archive holds (tests/it/lake_engines.rs computes them).

usage: engines_lake.py EXPECTED.json LAKE_DIR

EXPECTED.json: {"uid": u, "from": iso, "to": iso, "schemas": {schema: {"rows": n,
"duration": n, "resp_p": n, "range": n, "uid": n}}}: per schema the rows, the rows with
`duration > 600` (seconds), with `id.resp_p == 53`, with `from <= ts < to`, with `uid == u`;
null where the schema lacks the field. Prints every mismatch and exits 1 if there is any.
"""
import glob
import json
import os
import sys
from datetime import datetime, timezone

import datafusion
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds

ANSWERS = ["rows", "duration", "resp_p", "range", "uid"]
# The field each answer needs (rows: none).
NEEDS = {"rows": None, "duration": "duration", "resp_p": "id.resp_p", "range": "ts", "uid": "uid"}

problems = []
checked = []


def check(what, got, want):
    checked.append(what)
    if got != want:
        problems.append(f"{what}: got {got!r}, want {want!r}")


def iso(t):
    return datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone(timezone.utc)


def sql_conditions(e, timestamp):
    """The five answers as SQL conditions (`timestamp` turns ISO text into a timestamp)."""
    return {
        "rows": "true",
        "duration": '"duration" > 600',
        "resp_p": '"id.resp_p" = 53',
        "range": f'"ts" >= {timestamp(e["from"])} and "ts" < {timestamp(e["to"])}',
        "uid": f"\"uid\" = '{e['uid']}'",
    }


def want_whole(e, answer):
    """{schema: n} of one answer over the whole lake (schemas with 0 or without the field left out)."""
    return {s: v[answer] for s, v in e["schemas"].items() if v[answer]}


def run_sql(engine, query_one, e, timestamp, columns_of):
    """Per partition: each answer the schema has a field for, through `query_one(schema, cond)`."""
    conds = sql_conditions(e, timestamp)
    for schema, want in e["schemas"].items():
        cols = columns_of(schema)
        for a in ANSWERS:
            if want[a] is None:
                continue
            if NEEDS[a] and NEEDS[a] not in cols:
                problems.append(f"{engine} {schema}: no column {NEEDS[a]}")
                continue
            check(f"{engine} {schema} {a}", query_one(schema, conds[a]), want[a])


def duckdb_check(e, lake):
    con = duckdb.connect()
    ts = lambda t: f"TIMESTAMPTZ '{t}'"
    # One partition: no union_by_name, every file has the partition's schema.
    one = lambda s: f"read_parquet('{lake}/schema={s}/*/*.parquet', hive_partitioning = true)"
    cols = lambda s: {r[0] for r in con.execute(f"describe select * from {one(s)}").fetchall()}
    run_sql("duckdb", lambda s, c: con.execute(f"select count(*) from {one(s)} where {c}").fetchone()[0], e, ts, cols)
    whole = f"read_parquet('{lake}/*/*/*.parquet', hive_partitioning = true, union_by_name = true)"
    for a, c in sql_conditions(e, ts).items():
        got = dict(con.execute(f"select schema, count(*) from {whole} where {c} group by schema").fetchall())
        check(f"duckdb whole lake {a}", got, want_whole(e, a))


def datafusion_check(e, lake):
    ts = lambda t: f"arrow_cast('{t}', 'Timestamp(Nanosecond, Some(\"UTC\"))')"
    ctx = datafusion.SessionContext()
    for s in e["schemas"]:
        ctx.register_parquet(f'"{s}"', f"{lake}/schema={s}/", table_partition_cols=[("day", pa.string())])
    cols = lambda s: set(ctx.table(f'"{s}"').schema().names)
    q = lambda s, c: ctx.sql(f'select count(*) as n from "{s}" where {c}').to_pydict()["n"][0]
    run_sql("datafusion", q, e, ts, cols)
    ctx.register_parquet("lake", f"{lake}/", table_partition_cols=[("schema", pa.string()), ("day", pa.string())])
    for a, c in sql_conditions(e, ts).items():
        r = ctx.sql(f"select schema, count(*) as n from lake where {c} group by schema").to_pydict()
        check(f"datafusion whole lake {a}", dict(zip(r["schema"], r["n"])), want_whole(e, a))


def exprs(e, col):
    """The five answers as filter expressions built by `col(name)` (Polars or pyarrow)."""
    return {
        "rows": None,
        "duration": lambda: col("duration") > 600,
        "resp_p": lambda: col("id.resp_p") == 53,
        "range": lambda: (col("ts") >= iso(e["from"])) & (col("ts") < iso(e["to"])),
        "uid": lambda: col("uid") == e["uid"],
    }


def polars_check(e, lake):
    fs = exprs(e, pl.col)
    for s, want in e["schemas"].items():
        lf = pl.scan_parquet(f"{lake}/schema={s}/*/*.parquet", hive_partitioning=True)
        names = set(lf.collect_schema().names())
        for a in ANSWERS:
            if want[a] is None:
                continue
            if NEEDS[a] and NEEDS[a] not in names:
                problems.append(f"polars {s}: no column {NEEDS[a]}")
                continue
            q = lf if fs[a] is None else lf.filter(fs[a]())
            check(f"polars {s} {a}", q.select(pl.len()).collect().item(), want[a])
    # The whole lake: the partitions' scans concatenated by column name.
    whole = pl.concat(
        [pl.scan_parquet(p + "/*/*.parquet", hive_partitioning=True).with_columns(schema=pl.lit(p.rsplit("schema=", 1)[1]))
         for p in sorted(glob.glob(f"{lake}/schema=*"))],
        how="diagonal_relaxed",
    )
    for a in ANSWERS:
        q = whole if fs[a] is None else whole.filter(fs[a]())
        got = dict(q.group_by("schema").len().collect().iter_rows())
        check(f"polars whole lake {a}", got, want_whole(e, a))


def pyarrow_check(e, lake):
    fs = exprs(e, ds.field)
    for s, want in e["schemas"].items():
        # `day` named with its type: a partition of events without ts has only null days.
        days = ds.partitioning(pa.schema([("day", pa.string())]), flavor="hive")
        d = ds.dataset(f"{lake}/schema={s}", format="parquet", partitioning=days)
        for a in ANSWERS:
            if want[a] is None:
                continue
            if NEEDS[a] and NEEDS[a] not in d.schema.names:
                problems.append(f"pyarrow {s}: no column {NEEDS[a]}")
                continue
            check(f"pyarrow {s} {a}", d.count_rows(filter=None if fs[a] is None else fs[a]()), want[a])
    # The whole lake: the union of the partitions' schemas (one type per field name).
    parts = [ds.dataset(p, format="parquet") for p in sorted(glob.glob(f"{lake}/schema=*"))]
    schema = pa.unify_schemas([p.schema for p in parts])
    whole = ds.dataset(lake, format="parquet", partitioning="hive", schema=schema.append(pa.field("schema", pa.string())).append(pa.field("day", pa.string())))
    for a in ANSWERS:
        if fs[a] is None:
            table = whole.to_table(columns=["schema"])
        else:
            table = whole.to_table(columns=["schema"], filter=fs[a]())
        got = {r["schema"]: r["count_all"] for r in table.group_by("schema").aggregate([([], "count_all")]).to_pylist()}
        check(f"pyarrow whole lake {a}", got, want_whole(e, a))


def main():
    e = json.load(open(sys.argv[1]))
    lake = os.path.abspath(sys.argv[2])
    for engine in (duckdb_check, polars_check, datafusion_check, pyarrow_check):
        try:
            engine(e, lake)
        except Exception as x:  # an engine that cannot load the lake is a failure, not a crash
            problems.append(f"{engine.__name__}: {type(x).__name__}: {x}")
    for p in problems:
        print(p)
    print(f"checked {len(checked)} answers in {len(e['schemas'])} schemas: {len(problems)} problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

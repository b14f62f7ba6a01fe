#!/usr/bin/env python3
"""The three queries of bench/lake.sh on weir's Parquet lake in one engine, with times.

usage: lake_queries.py duckdb|datafusion|spark LAKE_DIR UID

Prints one line per query: `ENGINE QUERY ANSWER SECONDS`, where ANSWER is comparable with
`weir count`: q1 `schema=count,...` (rows per schema, from the Hive partition column),
q2 the count of orig_bytes > 1000, q3 the count of events with uid == UID. Startup (a Spark
session, registering the lake) is timed as `setup`.
"""
import sys
import time

engine, lake, uid = sys.argv[1], sys.argv[2], sys.argv[3]

QUERIES = {
    "q1": "SELECT schema, count(*) AS n FROM lake GROUP BY schema ORDER BY schema",
    "q2": "SELECT count(*) AS n FROM lake WHERE orig_bytes > 1000",
    "q3": f"SELECT count(*) AS n FROM lake WHERE uid = '{uid}'",
}


def answer(rows):
    rows = [tuple(r) for r in rows]
    if rows and len(rows[0]) == 2:
        return ",".join(f"{s}={int(n)}" for s, n in rows)
    return str(int(rows[0][0]))


t0 = time.perf_counter()
if engine == "duckdb":
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW lake AS SELECT * FROM read_parquet('{lake}/**/*.parquet', "
        "hive_partitioning = true, union_by_name = true)"
    )
    run = lambda q: con.execute(q).fetchall()
elif engine == "datafusion":
    import pyarrow as pa
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.register_parquet(
        "lake", lake, table_partition_cols=[("schema", pa.string()), ("day", pa.string())],
        file_extension=".parquet",
    )
    run = lambda q: [tuple(r.values()) for r in ctx.sql(q).to_pylist()]
elif engine == "spark":
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[*]")
        .appName("weir-lake")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Parquet TIMESTAMP(NANOS): Spark reads the nanoseconds as a long.
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.sql.parquet.mergeSchema", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.read.parquet(lake).createOrReplaceTempView("lake")
    run = lambda q: spark.sql(q).collect()
else:
    sys.exit(f"unknown engine {engine}")
print(f"{engine} setup - {time.perf_counter() - t0:.3f}", flush=True)

for name, q in QUERIES.items():
    t0 = time.perf_counter()
    rows = run(q)
    print(f"{engine} {name} {answer(rows)} {time.perf_counter() - t0:.3f}", flush=True)

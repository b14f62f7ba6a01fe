#!/usr/bin/env python3
"""Writes Parquet files as other tools do by default, for tests/it/lake_engines.rs.

usage: write_foreign.py DIR

DIR/pyarrow-{snappy,gzip,lz4,zstd}.parquet (pyarrow, snappy being its default), DIR/duckdb.parquet
(DuckDB's COPY ... (FORMAT parquet)), DIR/polars.parquet (Polars' write_parquet): each the same
three events (ts in microseconds, uid, a count, a double, a list of strings), no weir metadata.
DIR/claims-conn.parquet: metadata claiming zeek.conn, but ts as text. DIR/widths.parquet,
DIR/widths.arrow and DIR/unnamed-dns.parquet: see their comment below.
"""
import datetime
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

out = sys.argv[1]
utc = datetime.timezone.utc
ts = [datetime.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=utc), datetime.datetime(2024, 1, 2, tzinfo=utc), None]
table = pa.table({
    "ts": pa.array(ts, pa.timestamp("us", "UTC")),
    "uid": ["Ca", "Cb", None],
    "n": pa.array([1, 2, 3], pa.int64()),
    "x": [1.5, None, -2.25],
    "tags": [["a", "b"], [], None],
})
for codec in ["snappy", "gzip", "lz4", "zstd"]:
    pq.write_table(table, f"{out}/pyarrow-{codec}.parquet", compression=codec)
con = duckdb.connect()
con.register("t", table)
con.execute(f"copy (select * from t) to '{out}/duckdb.parquet' (format parquet)")
pl.from_arrow(table).write_parquet(f"{out}/polars.parquet")
bad = pa.table({"ts": ["2024-01-01T00:00:00Z"], "uid": ["Ca"]}).replace_schema_metadata({"zeek.schema": "zeek.conn"})
pq.write_table(bad, f"{out}/claims-conn.parquet")
# Other widths and encodings (issue 59): DuckDB's INTEGER, UTINYINT, SMALLINT, FLOAT, DATE and
# TIMESTAMPTZ; an Arrow IPC stream with int8, large_string and a dictionary of strings; and a
# DNS-like file without weir's metadata, for `--schema zeek.dns`.
con.execute(
    f"""copy (select (i - 1)::INTEGER as n, i::UTINYINT as u, (i * 1000)::SMALLINT as small,
              (i + 0.5)::FLOAT as f, DATE '2009-11-18' + i::INTEGER as d,
              TIMESTAMPTZ '2009-11-18 10:00:00+02' + to_seconds(i) as t
       from range(3) r(i)) to '{out}/widths.parquet' (format parquet)"""
)
ipc_table = pa.table({
    "b": pa.array([-1, 0, 127], pa.int8()),
    "big": pa.array(["x", "y", None], pa.large_string()),
    "k": pa.array(["a", "b", "a"]).dictionary_encode(),
})
with pa.ipc.new_stream(f"{out}/widths.arrow", ipc_table.schema) as w:
    w.write_table(ipc_table)
dns = pa.table({
    "ts": pa.array(ts[:2], pa.timestamp("us", "UTC")),
    "uid": ["Ca", "Cb"],
    "query": ["example.org", "example.net"],
})
pq.write_table(dns, f"{out}/unnamed-dns.parquet")

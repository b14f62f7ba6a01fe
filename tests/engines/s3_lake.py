#!/usr/bin/env python3
"""S3 helpers for tests/it/lake_s3.rs, against a local S3 server (moto) at ENDPOINT.

usage:
  s3_lake.py mkbucket ENDPOINT BUCKET
  s3_lake.py put ENDPOINT BUCKET KEY FILE
  s3_lake.py answers ENDPOINT s3://BUCKET/PREFIX LOCAL_LAKE_DIR
      reads the lake in the bucket with pyarrow's S3FileSystem and with Polars, and the local
      lake with pyarrow; prints every answer that differs and exits 1 if any does. Answers:
      rows per schema, `duration > 600`, `id.resp_p == 53`, per schema.
  s3_lake.py complete ENDPOINT s3://BUCKET/PREFIX
      opens every listed *.parquet object with pyarrow (a partial file would not open) and
      prints `N files, M rows`.

Credentials: whatever the environment holds (moto takes any).
"""
import sys

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

REGION = "us-east-1"


def s3fs(endpoint):
    scheme, host = endpoint.split("://", 1)
    return pafs.S3FileSystem(
        endpoint_override=host, scheme=scheme, region=REGION,
        access_key="test", secret_key="test",
    )


def boto(endpoint):
    import boto3
    return boto3.client("s3", endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id="test", aws_secret_access_key="test")


def answers_of(table):
    """{schema: [rows, duration > 600, id.resp_p == 53]} of a pyarrow table with `schema`."""
    import pyarrow.compute as pc
    out = {}
    for schema in sorted(set(table.column("schema").to_pylist())):
        t = table.filter(pc.equal(table.column("schema"), schema))
        a = [t.num_rows]
        a.append(pc.sum(pc.greater(t.column("duration"), 600)).as_py() or 0
                 if "duration" in t.column_names else None)
        a.append(pc.sum(pc.equal(t.column("id.resp_p"), 53)).as_py() or 0
                 if "id.resp_p" in t.column_names else None)
        out[schema] = a
    return out


def partition_answers(fs, base):
    """answers_of each `schema=` partition under `base`, read as one pyarrow dataset each."""
    out = {}
    for i in fs.get_file_info(pafs.FileSelector(base, recursive=False)):
        if i.base_name.startswith("schema="):
            t = ds.dataset(i.path, filesystem=fs, format="parquet", partitioning="hive").to_table()
            n = answers_of(t.append_column("schema", pa.array([i.base_name[7:]] * t.num_rows)))
            out.update(n)
    return out


def polars_answers(url, endpoint):
    import polars as pl
    opts = {"aws_endpoint_url": endpoint, "aws_region": REGION, "aws_allow_http": "true",
            "aws_access_key_id": "test", "aws_secret_access_key": "test"}
    out = {}
    # Per partition, as the guide shows (docs/book/src/lake/index.md): each `schema=` partition is one table.
    schemas = [i.base_name.split("=", 1)[1] for i in s3fs(endpoint).get_file_info(
        pafs.FileSelector(url[len("s3://"):], recursive=False)) if i.base_name.startswith("schema=")]
    for schema in sorted(schemas):
        lf = pl.scan_parquet(f"{url}/schema={schema}/**/*.parquet", hive_partitioning=True,
                             storage_options=opts)
        cols = lf.collect_schema().names()
        a = [lf.select(pl.len()).collect().item()]
        a.append(lf.filter(pl.col("duration") > 600).select(pl.len()).collect().item()
                 if "duration" in cols else None)
        a.append(lf.filter(pl.col("id.resp_p") == 53).select(pl.len()).collect().item()
                 if "id.resp_p" in cols else None)
        out[schema] = a
    return out


def main():
    cmd = sys.argv[1]
    if cmd == "mkbucket":
        boto(sys.argv[2]).create_bucket(Bucket=sys.argv[3])
    elif cmd == "put":
        _, _, endpoint, bucket, key, path = sys.argv
        boto(endpoint).upload_file(path, bucket, key)
    elif cmd == "answers":
        _, _, endpoint, url, local = sys.argv
        fs = s3fs(endpoint)
        want = partition_answers(pafs.LocalFileSystem(), local)
        got = {"pyarrow": partition_answers(fs, url[len("s3://"):]),
               "polars": polars_answers(url, endpoint)}
        bad = 0
        for engine, ans in got.items():
            if ans != want:
                bad += 1
                print(f"{engine}: got {ans}, want {want}")
        print(f"{len(want)} schemas, {sum(a[0] for a in want.values())} rows, {len(got)} engines")
        sys.exit(1 if bad else 0)
    elif cmd == "complete":
        _, _, endpoint, url = sys.argv
        fs = s3fs(endpoint)
        infos = fs.get_file_info(pafs.FileSelector(url[len("s3://"):], recursive=True,
                                                   allow_not_found=True))
        files = rows = 0
        for i in infos:
            if i.type == pafs.FileType.File and i.base_name.endswith(".parquet"):
                with fs.open_input_file(i.path) as f:
                    rows += pq.ParquetFile(f).metadata.num_rows
                files += 1
        print(f"{files} files, {rows} rows")
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()

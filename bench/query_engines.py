#!/usr/bin/env python3
"""bench/query.sh's engines: loads a Zeek TSV log into DuckDB and ClickHouse (chdb), then times
each query on weir, DuckDB and chdb and checks that all of them give the same answer.

  query_engines.py load LOG PARQUET DUCKDB_FILE CHDB_DIR
      makes whichever is missing: PARQUET (zstd, DuckDB's read_csv with explicit column types
      from LOG's #fields and #types lines, `#` lines skipped with comment='#'), DUCKDB_FILE (a
      native table `conn` copied from PARQUET) and CHDB_DIR (a chdb session directory holding a
      MergeTree table `conn` ORDER BY ts, filled from PARQUET with ClickHouse's file()).
  query_engines.py run WEIR REPS DATASET...
      DATASET is NAME|LOG|WEIR_DB|PARQUET|DUCKDB_FILE|CHDB_DIR|UID|T0|T1 (T0, T1: an hour, epoch
      seconds). Prints the table described in bench/query.sh; exits 1 if answers differ.
"""
import calendar
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

# Zeek type -> (DuckDB type, how to normalize a value of it). ClickHouse takes its types from
# the Parquet file (DOUBLE -> Float64, UBIGINT -> UInt64, ...).
DUCK_TYPES = {"time": "DOUBLE", "interval": "DOUBLE", "double": "DOUBLE", "count": "UBIGINT",
              "int": "BIGINT", "port": "INTEGER", "bool": "BOOLEAN"}


def zeek_columns(log):
    """[(name, zeek type)] from the log's #fields and #types lines."""
    fields = types = None
    with open(log) as f:
        for line in f:
            if not line.startswith("#"):
                break
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "#fields":
                fields = parts[1:]
            elif parts[0] == "#types":
                types = parts[1:]
    if not fields or not types:
        sys.exit(f"query_engines.py: {log}: no #fields or #types line")
    return list(zip(fields, types))


def load(log, parquet, duckfile, chdir):
    import duckdb
    if not os.path.exists(parquet):
        print(f"writing {parquet}", file=sys.stderr)
        cols = ", ".join(f"'{n}': '{DUCK_TYPES.get(t, 'VARCHAR')}'" for n, t in zeek_columns(log))
        duckdb.sql(f"""COPY (SELECT * FROM read_csv('{log}', delim='\t', comment='#', nullstr='-',
            header=false, auto_detect=false, quote='', escape='', columns={{{cols}}}))
            TO '{parquet}.tmp' (FORMAT parquet, COMPRESSION zstd)""")
        os.rename(parquet + ".tmp", parquet)
    if not os.path.exists(duckfile):
        print(f"writing {duckfile}", file=sys.stderr)
        if os.path.exists(duckfile + ".tmp"):
            os.remove(duckfile + ".tmp")
        con = duckdb.connect(duckfile + ".tmp")
        con.execute(f"CREATE TABLE conn AS SELECT * FROM read_parquet('{parquet}')")
        con.close()
        os.rename(duckfile + ".tmp", duckfile)
    if not os.path.exists(chdir):
        import chdb
        print(f"writing {chdir}", file=sys.stderr)
        shutil.rmtree(chdir + ".tmp", ignore_errors=True)
        con = chdb.connect(chdir + ".tmp")
        cur = con.cursor()
        cur.execute(f"""CREATE TABLE conn ENGINE = MergeTree ORDER BY ts AS
            SELECT * REPLACE (assumeNotNull(ts) AS ts) FROM file('{parquet}', Parquet)""")
        cur.close()
        con.close()
        os.rename(chdir + ".tmp", chdir)


# Queries: (name, kind, weir expression, SQL with {t} for the table and {re} for the regex
# function). kind: count (an integer), rows (the rows of a uid, all columns), top and topsum
# ((key, value) pairs, ties at the cut compared by value only), hist ((hour, count) pairs),
# sortts (the ts of the rows).
def queries(uid, t0, t1, label):
    return [
        ("count", "count", "", "SELECT count(*) FROM {t}"),
        ("orig_bytes > 1k", "count", "orig_bytes > 1k", "SELECT count(*) FROM {t} WHERE orig_bytes > 1000"),
        ("uid count", "count", f'uid == "{uid}"', f"SELECT count(*) FROM {{t}} WHERE uid = '{uid}'"),
        ("uid export", "rows", f'uid == "{uid}"', f"SELECT * FROM {{t}} WHERE uid = '{uid}'"),
        ("rare address", "count", "240.0.0.1",
         "SELECT count(*) FROM {t} WHERE \"id.orig_h\" = '240.0.0.1' OR \"id.resp_h\" = '240.0.0.1'"),
        (f"time range 1 h", "count", f"#timestamp >= {label[0]} && #timestamp < {label[1]}",
         f"SELECT count(*) FROM {{t}} WHERE ts >= {t0} AND ts < {t1}"),
        ('"Fa" in history', "count", '"Fa" in history', "SELECT count(*) FROM {t} WHERE history LIKE '%Fa%'"),
        ("history ~ /S.*F.*/", "count", "history ~ /S.*F.*/",
         "SELECT count(*) FROM {t} WHERE {re}(history, '^S.*F')"),
        ("top id.resp_p 10", "top", "top id.resp_p 10",
         'SELECT "id.resp_p", count(*) AS n FROM {t} WHERE "id.resp_p" IS NOT NULL '
         'GROUP BY "id.resp_p" ORDER BY n DESC, "id.resp_p" LIMIT 10'),
        ("count() by ts 1h", "hist", "summarize count() by ts resolution 1h",
         "SELECT floor(ts / 3600) * 3600 AS h, count(*) FROM {t} GROUP BY h ORDER BY h"),
        ("sort ts desc | head 10", "sortts", "sort ts desc | head 10",
         "SELECT * FROM {t} ORDER BY ts DESC LIMIT 10"),
        ("top sum(orig_bytes)", "topsum",
         "summarize sum(orig_bytes) by id.orig_h | sort sum(orig_bytes) desc | head 10",
         'SELECT "id.orig_h", sum(orig_bytes) AS s FROM {t} GROUP BY "id.orig_h" '
         "ORDER BY s DESC NULLS LAST LIMIT 10"),
    ]


def micros(v):
    """Epoch microseconds of a weir JSON time ("2009-11-18T08:00:21.244932Z") or epoch seconds."""
    if isinstance(v, str):
        d = datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
        return calendar.timegm(d.utctimetuple()) * 1_000_000 + d.microsecond
    return round(v * 1_000_000)


def norm_value(zt, v):
    if v is None:
        return None
    if zt == "time":
        return micros(v)
    if zt in ("interval", "double"):
        return round(float(v), 6)
    if zt.startswith(("set[", "table[", "vector[")):
        if isinstance(v, str):
            v = [] if v == "(empty)" else v.split(",")
        return tuple(sorted(str(x) for x in v))
    return v


def ranked(pairs):
    """Top-N pairs, ties at the cut compared by value: (values, pairs above the last value)."""
    vals = sorted((v for _, v in pairs), reverse=True)
    cut = vals[-1] if vals else None
    return (tuple(vals), frozenset((k, v) for k, v in pairs if v != cut))


def normalize(kind, rows, cols):
    """(answer shown, normalized answer) of SQL rows (tuples) or weir output (int or dicts)."""
    if kind == "count":
        n = rows if isinstance(rows, int) else int(rows[0][0])
        return n, n
    if rows and isinstance(rows[0], dict):  # weir JSON events
        if kind == "rows":
            rows = [tuple(r.get(n) for n, _ in cols) for r in rows]
        elif kind == "top":
            rows = [(r["id.resp_p"], r["count"]) for r in rows]
        elif kind == "hist":
            rows = [(r["ts"], r["count()"]) for r in rows]
        elif kind == "sortts":
            rows = [(r["ts"],) for r in rows]
        elif kind == "topsum":
            rows = [(r["id.orig_h"], r["sum(orig_bytes)"]) for r in rows]
    if kind == "rows":
        out = sorted(tuple(norm_value(t, v) for (_, t), v in zip(cols, r)) for r in rows)
        return len(rows), repr(out)
    if kind == "top" or kind == "topsum":
        return len(rows), ranked([(r[0], int(r[1])) for r in rows])
    if kind == "hist":
        return len(rows), tuple(sorted((micros(r[0]), int(r[1])) for r in rows))
    if kind == "sortts":
        return len(rows), tuple(sorted(micros(r[0]) for r in rows))
    raise ValueError(kind)


FRESH = {
    "duckdb": "import duckdb, json, sys\n"
              "con = duckdb.connect(sys.argv[1], read_only=True)\n"
              # A query past 2 s would print DuckDB's progress bar into the JSON answer.
              "con.execute('SET enable_progress_bar = false')\n"
              "print(json.dumps(con.execute(sys.argv[2]).fetchall(), default=str))",
    "chdb": "import chdb, json, sys\n"
            "con = chdb.connect(sys.argv[1]); cur = con.cursor(); cur.execute(sys.argv[2])\n"
            "print(json.dumps(cur.fetchall(), default=str))",
}


def fresh(engine, path, sql):
    t = time.perf_counter()
    out = subprocess.run(["python3", "-c", FRESH[engine], path, sql], capture_output=True, text=True)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        sys.exit(f"{engine} (fresh process) failed: {sql}: {out.stderr[-2000:]}")
    return dt, json.loads(out.stdout)


def run(weir, reps, datasets):
    import chdb
    import duckdb

    def weir_run(db, kind, expr):
        argv = [weir, "count", "--db", db] if kind == "count" else [weir, "export", "--db", db, "--to", "json"]
        t = time.perf_counter()
        out = subprocess.run(argv + ([expr] if expr else []), capture_output=True, text=True)
        dt = time.perf_counter() - t
        if out.returncode != 0:
            sys.exit(f"weir failed: {' '.join(argv)} {expr!r}: {out.stderr}")
        if kind == "count":
            return dt, int(out.stdout)
        return dt, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def duck_in(path, sql):
        con = duckdb.connect(path, read_only=True) if path else duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        t = time.perf_counter()
        rows = con.execute(sql).fetchall()
        dt = time.perf_counter() - t
        con.close()
        return dt, rows

    def chdb_in(path, sql):
        # Connecting starts an embedded server (about 0.5 s): not counted. It is closed after
        # each query, since a session directory admits one process at a time.
        con = chdb.connect(path)
        cur = con.cursor()
        t = time.perf_counter()
        cur.execute(sql)
        rows = cur.fetchall()
        dt = time.perf_counter() - t
        cur.close()
        con.close()
        return dt, rows

    # What any fresh process costs here, timed as weir's are: the floor under weir's column
    # (a count that DuckDB answers in-process in about 1 ms cannot come out below it).
    def spawn(argv):
        t = time.perf_counter()
        subprocess.run(argv, capture_output=True, text=True, check=True)
        return time.perf_counter() - t

    floor = {name: statistics.median(spawn(argv) for _ in range(21))
             for name, argv in [("true", [shutil.which("true") or "/bin/true"]),
                                ("weir --version", [weir, "--version"])]}
    print("a fresh process, timed as weir's (median of 21): "
          + ", ".join(f"{name} {t * 1000:.2f} ms" for name, t in floor.items()))

    engines = ["weir", "duck-in", "duck-fresh", "pq-in", "chdb-in", "chdb-fresh"]
    head = (f"{'dataset':<8} {'query':<24} {'answer':>10} {'weir':>9} {'duck in':>9} {'duck new':>9}"
            f" {'pq in':>9} {'chdb in':>9} {'chdb new':>9} {'weir/duck in':>12}")
    print(head)
    failed, legend = False, []
    for spec in datasets:
        name, log, db, pq, duckfile, chdir, uid, t0, t1 = spec.split("|")
        cols = zeek_columns(log)
        label = tuple(datetime.datetime.fromtimestamp(int(x), datetime.timezone.utc)
                      .strftime("%Y-%m-%dT%H:%M:%SZ") for x in (t0, t1))
        for qname, kind, expr, sql in queries(uid, t0, t1, label):
            duck_sql = sql.format(t="conn", re="regexp_matches")
            pq_sql = sql.format(t=f"read_parquet('{pq}')", re="regexp_matches")
            ch_sql = sql.format(t="conn", re="match")
            legend.append(f"{name} {qname}: weir {expr!r}; SQL {sql.format(t='T', re='regexp_matches')}")
            runs = {
                "weir": lambda: weir_run(db, kind, expr),
                "duck-in": lambda: duck_in(duckfile, duck_sql),
                "duck-fresh": lambda: fresh("duckdb", duckfile, duck_sql),
                "pq-in": lambda: duck_in(None, pq_sql),
                "chdb-in": lambda: chdb_in(chdir, ch_sql),
                "chdb-fresh": lambda: fresh("chdb", chdir, ch_sql),
            }
            times = {e: [] for e in engines}
            answers = {}
            for i in range(reps):
                k = i % len(engines)
                for e in engines[k:] + engines[:k]:  # each repetition starts with the next engine
                    dt, rows = runs[e]()
                    times[e].append(dt)
                    answers.setdefault(normalize(kind, rows, cols), set()).add(e)
            med = {e: statistics.median(times[e]) for e in engines}
            shown = ", ".join(str(a[0]) for a in answers)
            ms = " ".join(f"{med[e] * 1000:>7.1f}ms" for e in engines)
            print(f"{name:<8} {qname:<24} {shown:>10} {ms} {med['weir'] / med['duck-in']:>11.2f}x", flush=True)
            if len(answers) != 1:
                failed = True
                for (n, a), who in answers.items():
                    print(f"  ANSWERS DIFFER: {sorted(who)}: {n}: {str(a)[:300]}")
    print("\nqueries (SQL as DuckDB's, T the table; chdb writes the regex as match(history, ...)):")
    for line in legend:
        print("  " + line)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "load":
        load(*sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    else:
        sys.exit(__doc__)

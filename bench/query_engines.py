#!/usr/bin/env python3
"""bench/query.sh's engines: loads a Zeek TSV log into DuckDB and ClickHouse (chdb), then times
each query on weir, DuckDB and chdb and checks that all of them give the same answer.

  query_engines.py load LOG PARQUET DUCKDB_FILE CHDB_DIR
      makes whichever is missing: PARQUET (zstd, DuckDB's read_csv with explicit column types
      from LOG's #fields and #types lines, `#` lines skipped with comment='#'), DUCKDB_FILE (a
      native table `conn` copied from PARQUET) and CHDB_DIR (a chdb session directory holding a
      MergeTree table `conn` ORDER BY ts, filled from PARQUET with ClickHouse's file()).
  query_engines.py run WEIR REPS DATASET...
      DATASET is NAME|LOG|WEIR_DB|PARQUET|DUCKDB_FILE|CHDB_DIR|UID|T0|T1[|BASE_DB] (T0, T1: an
      hour, epoch seconds; BASE_DB: the archive the baseline weir imported). Prints the table
      described in bench/query.sh; exits 1 if answers differ.

  Environment: WEIR_BASE, a weir binary built from an earlier commit, adds its two columns
  (fresh and resident) and the ratios new / base; ENGINES, a comma-separated subset of the
  engines (default: all; chdb's are left out, with a note, when its package is missing).
"""
import calendar
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
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


def have_chdb():
    try:
        import chdb  # noqa: F401
        return True
    except ImportError:
        return False


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
    if not os.path.exists(chdir) and not have_chdb():
        print(f"note: chdb missing: {chdir} not written", file=sys.stderr)
    elif not os.path.exists(chdir):
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
def queries(uid, t0, t1, label, flow):
    a, p, b, q, proto = (flow[k] for k in ("id.orig_h", "id.orig_p", "id.resp_h", "id.resp_p", "proto"))
    both_ways = (f"((\"id.orig_h\" = '{a}' AND \"id.orig_p\" = {p} AND \"id.resp_h\" = '{b}' AND \"id.resp_p\" = {q}) "
                 f"OR (\"id.orig_h\" = '{b}' AND \"id.orig_p\" = {q} AND \"id.resp_h\" = '{a}' AND \"id.resp_p\" = {p})) "
                 f"AND proto = '{proto}'")
    return [
        ("count", "count", "", "SELECT count(*) FROM {t}"),
        ("orig_bytes > 1k", "count", "orig_bytes > 1k", "SELECT count(*) FROM {t} WHERE orig_bytes > 1000"),
        ("uid count", "count", f'uid == "{uid}"', f"SELECT count(*) FROM {{t}} WHERE uid = '{uid}'"),
        ("uid export", "rows", f'uid == "{uid}"', f"SELECT * FROM {{t}} WHERE uid = '{uid}'"),
        ("rare address", "count", "240.0.0.1",
         "SELECT count(*) FROM {t} WHERE \"id.orig_h\" = '240.0.0.1' OR \"id.resp_h\" = '240.0.0.1'"),
        # Issue 57: a concept needle against the same needle on the plain field, the uid's
        # flow by its Community ID (SQL: its 5-tuple either way, which is what the ID hashes)
        # against the uid needle above, and a Sigma rule (bench/rules/) against its SQL.
        ("id.orig_h needle", "count", "id.orig_h == 240.0.0.1",
         "SELECT count(*) FROM {t} WHERE \"id.orig_h\" = '240.0.0.1'"),
        ("concept net.src.ip", "count", "net.src.ip == 240.0.0.1",
         "SELECT count(*) FROM {t} WHERE \"id.orig_h\" = '240.0.0.1'"),
        ("community_id of uid", "count", f'net.community_id == "{flow["community_id"]}"',
         "SELECT count(*) FROM {t} WHERE " + both_ways.replace("{", "{{").replace("}", "}}")),
        ("sigma 240.0.0.0/24", "count", "--sigma " + SIGMA_RULE,
         "SELECT count(*) FROM {t} WHERE \"id.orig_h\" LIKE '240.0.0.%' OR \"id.resp_h\" LIKE '240.0.0.%'"),
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


# The Sigma row's rule: the rare address of the generated events on either side of a conn.
SIGMA_RULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules", "conn_reserved_range.yml")


def needle_flow(weir, db, uid):
    """The 5-tuple and Community ID of the uid's first event (weir computes the ID at import)."""
    out = subprocess.run([weir, "export", "--db", db, "--to", "json", "-n", "1", f'uid == "{uid}"'],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[0])


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


class Resident:
    """`weir serve` on one archive, queried through its JSON API on one kept-alive HTTP
    connection: weir resident (the reader and its segment cache stay warm between queries)."""

    def __init__(self, weir, db):
        import http.client
        self.proc = subprocess.Popen([weir, "serve", "--db", db, "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        said = []
        while not said or "serving http://" not in said[-1]:  # "weir: serving http://ADDR/"
            said.append(self.proc.stderr.readline())
            if not said[-1]:
                self.proc.kill()
                sys.exit(f"weir serve --db {db} did not start: {''.join(said)[-2000:]}")
        line = said[-1]
        # Whatever it logs later is read and dropped, so that a full pipe never stalls it.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()
        host, port = line.split("http://", 1)[1].strip().rstrip("/").rsplit(":", 1)
        self.con = http.client.HTTPConnection(host, int(port))

    def run(self, kind, expr):
        path = "/api/v1/count" if kind == "count" else "/api/v1/query"
        body = {"query": expr} if expr else {}  # no query: every event
        if expr.startswith("--sigma "):
            with open(expr.split(" ", 1)[1]) as f:
                body = {"sigma": f.read()}
        import http.client
        for attempt in range(2):
            t = time.perf_counter()
            try:
                self.con.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                resp = self.con.getresponse()
                data = resp.read()
                break
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                # The server closed the idle connection (its idle timeout): reconnect, and
                # time the query again from the start.
                self.con.close()
                if attempt:
                    raise
        dt = time.perf_counter() - t
        if resp.status != 200:
            sys.exit(f"weir serve failed: {path} {expr!r}: {resp.status} {data[:2000]!r}")
        if kind == "count":
            return dt, int(json.loads(data)["count"])
        return dt, [json.loads(line) for line in data.decode().splitlines() if line.strip()]

    def close(self):
        self.con.close()
        self.proc.terminate()
        self.proc.wait()


ALL_ENGINES = ["weir-base", "weir", "weir-base-res", "weir-res", "duck-warm", "duck-in", "duck-fresh",
               "pq-in", "chdb-in", "chdb-fresh"]
TITLES = {"weir-base": "base", "weir": "weir", "weir-base-res": "base res", "weir-res": "weir res",
          "duck-warm": "duck warm", "duck-in": "duck in", "duck-fresh": "duck new", "pq-in": "pq in",
          "chdb-in": "chdb in", "chdb-fresh": "chdb new"}


def run(weir, reps, datasets):
    import duckdb

    base = os.environ.get("WEIR_BASE")
    engines = [e for e in ALL_ENGINES
               if e in os.environ.get("ENGINES", ",".join(ALL_ENGINES)).split(",")]
    if not base:
        engines = [e for e in engines if not e.startswith("weir-base")]
    if not have_chdb() and any(e.startswith("chdb") for e in engines):
        print("note: chdb missing: its columns are left out")
        engines = [e for e in engines if not e.startswith("chdb")]

    def weir_run(binary, db, kind, expr):
        argv = [binary, "count", "--db", db] if kind == "count" else [binary, "export", "--db", db, "--to", "json"]
        args = expr.split(" ", 1) if expr.startswith("--sigma ") else [expr] if expr else []
        t = time.perf_counter()
        out = subprocess.run(argv + args, capture_output=True, text=True)
        dt = time.perf_counter() - t
        if out.returncode != 0:
            sys.exit(f"weir failed: {' '.join(argv)} {expr!r}: {out.stderr}")
        if kind == "count":
            # `count --sigma` prints the count, the rule's id and title, tab-separated.
            return dt, int(out.stdout.split("\t")[0])
        return dt, [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def duck_in(path, sql):
        con = duckdb.connect(path, read_only=True) if path else duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        t = time.perf_counter()
        rows = con.execute(sql).fetchall()
        dt = time.perf_counter() - t
        con.close()
        return dt, rows

    def duck_warm(con, sql):
        t = time.perf_counter()
        rows = con.execute(sql).fetchall()
        return time.perf_counter() - t, rows

    def chdb_in(path, sql):
        import chdb
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

    ratios = ["weir/duck in"] + (["weir/base", "res/base res"] if base else []) \
        + (["res/duck warm"] if "weir-res" in engines and "duck-warm" in engines else [])
    head = (f"{'dataset':<8} {'query':<24} {'answer':>10} "
            + " ".join(f"{TITLES[e]:>9}" for e in engines) + " " + " ".join(f"{r:>13}" for r in ratios))
    print(head)
    failed, legend = False, []
    for spec in datasets:
        name, log, db, pq, duckfile, chdir, uid, t0, t1, *rest = spec.split("|")
        base_db = rest[0] if rest and rest[0] else db
        cols = zeek_columns(log)
        label = tuple(datetime.datetime.fromtimestamp(int(x), datetime.timezone.utc)
                      .strftime("%Y-%m-%dT%H:%M:%SZ") for x in (t0, t1))
        servers = {}
        if "weir-res" in engines:
            servers["weir-res"] = Resident(weir, db)
        if "weir-base-res" in engines:
            servers["weir-base-res"] = Resident(base, base_db)
        # DuckDB warm: one connection for the dataset, each query run once before it is timed
        # (the table queried before, as in a user's session).
        warm = duckdb.connect(duckfile, read_only=True) if "duck-warm" in engines else None
        if warm is not None:
            warm.execute("SET enable_progress_bar = false")
        flow = needle_flow(weir, db, uid)
        for qname, kind, expr, sql in queries(uid, t0, t1, label, flow):
            duck_sql = sql.format(t="conn", re="regexp_matches")
            pq_sql = sql.format(t=f"read_parquet('{pq}')", re="regexp_matches")
            ch_sql = sql.format(t="conn", re="match")
            legend.append(f"{name} {qname}: weir {expr!r}; SQL {sql.format(t='T', re='regexp_matches')}")
            runs = {
                "weir": lambda: weir_run(weir, db, kind, expr),
                "weir-base": lambda: weir_run(base, base_db, kind, expr),
                "weir-res": lambda: servers["weir-res"].run(kind, expr),
                "weir-base-res": lambda: servers["weir-base-res"].run(kind, expr),
                "duck-warm": lambda: duck_warm(warm, duck_sql),
                "duck-in": lambda: duck_in(duckfile, duck_sql),
                "duck-fresh": lambda: fresh("duckdb", duckfile, duck_sql),
                "pq-in": lambda: duck_in(None, pq_sql),
                "chdb-in": lambda: chdb_in(chdir, ch_sql),
                "chdb-fresh": lambda: fresh("chdb", chdir, ch_sql),
            }
            for e in ("weir-res", "weir-base-res", "duck-warm"):  # the warm-up, not timed
                if e in engines:
                    runs[e]()
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
            pairs = {"weir/duck in": ("weir", "duck-in"), "weir/base": ("weir", "weir-base"),
                     "res/base res": ("weir-res", "weir-base-res"), "res/duck warm": ("weir-res", "duck-warm")}
            rs = " ".join(f"{med[pairs[r][0]] / med[pairs[r][1]]:>12.2f}x" if all(x in med for x in pairs[r])
                          else f"{'-':>13}" for r in ratios)
            print(f"{name:<8} {qname:<24} {shown:>10} {ms} {rs}  load {os.getloadavg()[0]:.2f}", flush=True)
            if len(answers) != 1:
                failed = True
                for (n, a), who in answers.items():
                    print(f"  ANSWERS DIFFER: {sorted(who)}: {n}: {str(a)[:300]}")
        for server in servers.values():
            server.close()
        if warm is not None:
            warm.close()
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

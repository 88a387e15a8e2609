"""DuckDB as a real client of webevo's output.

    check_queries.py OUT NEWS_OUT

OUT is a run of jobs/all.toml on the demo crawl (`demo-out`), NEWS_OUT a run of
jobs/echo-eval.toml on its news crawl (`demo-out-news`). The check

1. opens every table of schemas/ with read_parquet (Hive partitioning on) and
   compares DuckDB's column names and types with the schema file;
2. runs every SQL statement of README.md that reads demo-out or demo-out-news,
   which must return at least one row;
3. runs every examples/queries/*.sql, which must return rows, and checks its
   `-- assert: EXPR` line on every row of the result.

With --markdown, prints each example query's result as a Markdown table (for the
README) instead. Exit code 1 on a failed check, 3 when duckdb is not installed.
"""

import glob
import json
import os
import re
import sys

try:
    import duckdb
except ImportError:
    print("python package duckdb is not installed (make test installs it)")
    sys.exit(3)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# schema type -> what DuckDB reports for it.
DUCKDB_TYPES = {
    "int64": "BIGINT",
    "int32": "INTEGER",
    "float64": "DOUBLE",
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "timestamp[us, UTC]": "TIMESTAMP WITH TIME ZONE",
}

ECHO_TABLES = {"content_sources", "source_estimates", "echo_schedule", "echo_plan", "echo_eval"}


def rewrite(sql, out, news):
    """Points the documented demo paths at the outputs under test."""
    sql = sql.replace("'demo-out-news/", f"'{news}/")
    return sql.replace("'demo-out/", f"'{out}/")


def statements(block):
    """The statements of a SQL block: split at semicolons ending a line."""
    parts = re.split(r";\s*(?:\n|$)", block)
    out = []
    for p in parts:
        body = "\n".join(l for l in p.splitlines() if not l.strip().startswith("--")).strip()
        if body:
            out.append(p.strip())
    return out


def check_tables(con, out, news, failures):
    for path in sorted(glob.glob(os.path.join(ROOT, "schemas", "*.json"))):
        schema = json.load(open(path))
        table = schema["table"]
        base = news if table in ECHO_TABLES else out
        if schema.get("partitioned_by"):
            source = f"read_parquet('{base}/{table}/**/*.parquet', hive_partitioning = true)"
        else:
            source = f"read_parquet('{base}/{table}/*.parquet')"
        try:
            cols = con.execute(f"describe select * from {source}").fetchall()
            rows = con.execute(f"select count(*) from {source}").fetchone()[0]
        except duckdb.Error as e:
            failures.append(f"{table}: cannot read: {e}")
            continue
        got = {c[0]: c[1] for c in cols}
        want = {c["name"]: DUCKDB_TYPES[c["type"]] for c in schema["columns"]}
        if set(got) != set(want):
            failures.append(f"{table}: columns {sorted(got)} != schema {sorted(want)}")
            continue
        for name, t in want.items():
            # Hive partition values are integers DuckDB infers as BIGINT.
            if got[name] != t:
                failures.append(f"{table}.{name}: DuckDB reads {got[name]}, schema says {t}")
        if rows == 0:
            failures.append(f"{table}: no rows")
        print(f"table {table}: {rows} rows, {len(got)} columns as in schemas/{table}.json")


def check_readme(con, out, news, failures):
    text = open(os.path.join(ROOT, "README.md")).read()
    n = 0
    for block in re.findall(r"```sql\n(.*?)```", text, re.S):
        for stmt in statements(block):
            if "'demo-out" not in stmt:
                continue  # a query on data the README imports from elsewhere
            n += 1
            try:
                rows = con.execute(rewrite(stmt, out, news)).fetchall()
            except duckdb.Error as e:
                failures.append(f"README query failed: {e}\n{stmt}")
                continue
            if not rows:
                failures.append(f"README query returned no rows:\n{stmt}")
    print(f"README: {n} queries on the demo output ran and returned rows")
    if n < 10:
        failures.append(f"only {n} README queries found")


def example_queries():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "queries", "*.sql")))


def bare_query(sql):
    """The query of an example file without its assert line and final semicolon."""
    return re.sub(r"^-- assert: .*$", "", sql, flags=re.M).strip().rstrip(";")


def check_examples(con, out, news, failures):
    files = example_queries()
    if not files:
        failures.append("no examples/queries/*.sql")
    for path in files:
        sql = open(path).read()
        m = re.search(r"^-- assert: (.+)$", sql, re.M)
        query = bare_query(rewrite(sql, out, news))
        name = os.path.basename(path)
        try:
            rows = con.execute(query).fetchall()
            bad = []
            if m:
                bad = con.execute(
                    f"select * from ({query}) q where not coalesce(({m.group(1)}), false)"
                ).fetchall()
        except duckdb.Error as e:
            failures.append(f"{name}: {e}")
            continue
        if not rows:
            failures.append(f"{name}: no rows")
        if bad:
            failures.append(f"{name}: {len(bad)} rows break `{m.group(1)}`, e.g. {bad[0]}")
        print(f"{name}: {len(rows)} rows" + (f", all satisfy {m.group(1)}" if m else ""))


def markdown(con, out, news):
    for path in example_queries():
        sql = open(path).read()
        query = bare_query(rewrite(sql, out, news))
        cur = con.execute(query)
        names = [d[0] for d in cur.description]
        print(f"### {os.path.basename(path)}\n")
        print("| " + " | ".join(names) + " |")
        print("|" + "---|" * len(names))
        for row in cur.fetchall():
            print("| " + " | ".join("" if v is None else str(v) for v in row) + " |")
        print()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out, news = (os.path.abspath(a) for a in args[:2])
    con = duckdb.connect()
    if "--markdown" in sys.argv:
        markdown(con, out, news)
        return
    failures = []
    check_tables(con, out, news, failures)
    check_readme(con, out, news, failures)
    check_examples(con, out, news, failures)
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        sys.exit(1)
    print("every table, README query and example query checks out")


if __name__ == "__main__":
    main()

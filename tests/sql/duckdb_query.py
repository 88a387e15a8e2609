"""Reads every webevo table of OUT with DuckDB, as a user would, and checks that
the per-host rows add up to the per-snapshot rows. Exit 3 when duckdb is missing."""
import sys

try:
    import duckdb
except ImportError:
    print("python package duckdb is not installed (pip install duckdb)")
    sys.exit(3)

out = sys.argv[1]
con = duckdb.connect()
for table in ["snapshots", "host_snapshots", "pages"]:
    n = con.execute(f"select count(*) from read_parquet('{out}/{table}/**/*.parquet', hive_partitioning = true)").fetchone()[0]
    print(f"{table}: {n} rows")

mismatch = con.execute(f"""
    with h as (
        select snapshot, sum(pages_fetched) pf, sum(new_pages) np, sum(links) l,
               count(*) filter (where pages_fetched > 0) hosts
        from read_parquet('{out}/host_snapshots/**/*.parquet', hive_partitioning = true)
        group by snapshot)
    select s.snapshot from read_parquet('{out}/snapshots/**/*.parquet', hive_partitioning = true) s
    join h using (snapshot)
    where s.pages_fetched != h.pf or s.new_pages != h.np or s.links != h.l or s.hosts != h.hosts
""").fetchall()
if mismatch:
    print(f"per-host sums differ from snapshot totals at {mismatch}")
    sys.exit(1)
print("per-host sums equal snapshot totals")

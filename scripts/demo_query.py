"""Prints a DuckDB query over a webevo output directory, and its result."""
import sys

import duckdb

out = sys.argv[1] if len(sys.argv) > 1 else "demo-out"
query = f"""
select snapshot, strftime(time, '%Y-%m-%d') as day, pages_fetched, new_pages,
       gone_pages, changed_pages, links, new_links, new_hosts
from read_parquet('{out}/snapshots/**/*.parquet', hive_partitioning = true)
order by snapshot
"""
print("DuckDB query:")
print(query)
duckdb.sql(query).show()

query = f"""
select host, sum(new_pages) as new_pages, sum(changed_pages) as changed_pages
from read_parquet('{out}/host_snapshots/**/*.parquet', hive_partitioning = true)
group by host order by new_pages desc limit 5
"""
print("The five hosts with most new pages:")
print(query)
duckdb.sql(query).show()

query = f"""
with t as (select * from read_parquet('{out}/cover_trajectory/**/*.parquet', hive_partitioning = true)),
     budgets as (select unnest([1, 2, 5, 10, 20]) as k)
select k, avg(covered) as mean_covered
from (select k, snapshot, site, max(covered) as covered from t, budgets where rank <= k
      group by k, snapshot, site)
group by k order by k
"""
print("Discovery: mean new pages a site's greedy cover finds with a budget of k old pages:")
print(query)
duckdb.sql(query).show()

query = f"""
select url, score, in_links
from read_parquet('{out}/pagerank/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot) from read_parquet('{out}/pagerank_runs/**/*.parquet', hive_partitioning = true))
order by score desc limit 5
"""
print("RankMass: the five pages of highest PageRank in the last snapshot:")
print(query)
duckdb.sql(query).show()

query = f"""
select algorithm, "window", downloads_to_098_guaranteed, downloads_to_098_actual, rounds
from read_parquet('{out}/rankmass_summary/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot) from read_parquet('{out}/rankmass_summary/**/*.parquet', hive_partitioning = true))
order by algorithm, "window"
"""
print("RankMass: pages to fetch to be sure of (guaranteed) and to hold (actual) 98% of the PageRank:")
print(query)
duckdb.sql(query).show()

news = sys.argv[2] if len(sys.argv) > 2 else None
if news:
    query = f"""
select crawl_rate_per_s, sources_crawled, sources_never,
       round(source_fetches_per_s, 4) as source_fetches_per_s,
       round(new_page_fetches_per_s, 4) as new_page_fetches_per_s,
       round(profit_per_s, 3) as clicks_per_s
from read_parquet('{news}/echo_plan/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot) from read_parquet('{news}/echo_plan/**/*.parquet', hive_partitioning = true))
order by crawl_rate_per_s
"""
    print("ECHO on the 10-minute news crawl: the optimal recrawl schedule per crawl rate:")
    print(query)
    duckdb.sql(query).show()

    query = f"""
select crawl_rate_per_s, policy, round(overall_quality, 3) as clicks_per_s,
       source_fetches, new_page_fetches
from read_parquet('{news}/echo_eval/*.parquet')
order by crawl_rate_per_s, overall_quality desc
"""
    print("ECHO: clicks per second of each simulated crawl policy, per crawl rate:")
    print(query)
    duckdb.sql(query).show(max_rows=40)

-- Which old pages should I recrawl to find 90% of the new pages?
-- Per site, the greedy cover's first pages until 90% of the site's new pages are
-- covered (cover_summary.cover90_size of them), at the latest snapshot.
with latest as (
    select max(snapshot) as snapshot
    from read_parquet('demo-out/cover_summary/**/*.parquet', hive_partitioning = true)
)
select t.site, t.rank, t.url, t.gain, t.covered, s.new_pages
from read_parquet('demo-out/cover_trajectory/**/*.parquet', hive_partitioning = true) t
join read_parquet('demo-out/cover_summary/**/*.parquet', hive_partitioning = true) s
  using (snapshot, site)
where t.snapshot = (select snapshot from latest) and t.rank <= s.cover90_size
order by s.new_pages desc, t.site, t.rank
limit 12;
-- assert: rank >= 1 and covered <= new_pages and gain >= 1

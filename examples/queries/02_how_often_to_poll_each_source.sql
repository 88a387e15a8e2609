-- Which content sources should I poll, and how often (every hour or less)?
-- The ECHO schedule at the largest crawl rate of the job on the news crawl's latest
-- snapshot: the sources worth polling at all, most profitable first, with their
-- optimal interval. Sources with a null interval are never worth a fetch.
with latest as (
    select max(snapshot) as snapshot, max(crawl_rate_per_s) as rate
    from read_parquet('demo-out-news/echo_schedule/**/*.parquet', hive_partitioning = true)
)
select url, crawl_rate_per_s, round(interval_s / 3600, 2) as every_hours,
       interval_s <= 3600 as hourly, round(profit_per_s * 3600, 2) as clicks_per_hour
from read_parquet('demo-out-news/echo_schedule/**/*.parquet', hive_partitioning = true)
where snapshot = (select snapshot from latest)
  and crawl_rate_per_s = (select rate from latest) and interval_s is not null
order by profit_per_s desc
limit 10;
-- assert: every_hours > 0 and clicks_per_hour > 0

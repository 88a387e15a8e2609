-- Which pages should I refresh most often (daily or more), and how often?
-- The optimal revisit plan for the job's fetch budget (jobs/all.toml: 1000 fetches
-- a day) at the latest snapshot, next to what uniform and change-proportional
-- allocation would give the same pages. Pages that change too fast to keep fresh
-- get 0 from the optimum and are left out here.
select url, round("lambda" * 86400, 3) as changes_per_day,
       round(1 / freq_optimal_per_day, 1) as every_days,
       freq_optimal_per_day >= 1 as daily,
       round(freq_optimal_per_day, 3) as optimal_per_day,
       round(freq_uniform_per_day, 3) as uniform_per_day,
       round(freq_proportional_per_day, 3) as proportional_per_day,
       round(freshness_optimal, 3) as freshness
from read_parquet('demo-out/revisit_plan/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot)
                  from read_parquet('demo-out/revisit_plan/**/*.parquet',
                                    hive_partitioning = true))
  and freq_optimal_per_day > 0
order by freq_optimal_per_day desc, url
limit 10;
-- assert: optimal_per_day > 0 and freshness > 0 and freshness <= 1

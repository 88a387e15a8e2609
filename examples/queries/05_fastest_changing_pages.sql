-- Which pages change fastest, and how sure are we?
-- Maximum-likelihood change rates (per day) with their 95% interval, for pages
-- observed at least four times, at the latest snapshot.
select url, observations, changes,
       round(lambda_mle * 86400, 3) as per_day,
       round(lambda_lo * 86400, 3) as lo, round(lambda_hi * 86400, 3) as hi
from read_parquet('demo-out/page_change/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot)
                  from read_parquet('demo-out/page_change/**/*.parquet',
                                    hive_partitioning = true))
  and observations >= 4 and lambda_mle is not null and isfinite(lambda_mle)
order by lambda_mle desc, url
limit 10;
-- assert: lo <= per_day and per_day <= hi and changes <= observations

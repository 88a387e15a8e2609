-- How many pages must I fetch to be sure I hold 98% of the RankMass?
-- Per crawl ordering, the downloads after which the guaranteed (lower-bound) and
-- the actual RankMass pass 0.98, at the latest snapshot.
select algorithm, "window", downloads_to_098_guaranteed, downloads_to_098_actual,
       downloads as pages_in_graph
from read_parquet('demo-out/rankmass_summary/**/*.parquet', hive_partitioning = true)
where snapshot = (select max(snapshot)
                  from read_parquet('demo-out/rankmass_summary/**/*.parquet',
                                    hive_partitioning = true))
order by algorithm, "window";
-- assert: downloads_to_098_actual <= downloads_to_098_guaranteed

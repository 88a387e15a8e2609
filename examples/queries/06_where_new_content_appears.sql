-- Where does new content appear: on sites I know, or on new ones?
-- Per snapshot, new pages on new vs old sites and the pages per new site.
select snapshot, new_pages, new_pages_on_new_sites, new_sites,
       round(p_new_site, 3) as share_on_new_sites,
       round(pages_per_new_site, 1) as pages_per_new_site
from read_parquet('demo-out/new_sites/**/*.parquet', hive_partitioning = true)
order by snapshot;
-- assert: new_pages_on_new_sites <= new_pages

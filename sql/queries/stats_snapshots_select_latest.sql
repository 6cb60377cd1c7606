-- name: stats_snapshots_select_latest
-- /stats reads the newest materialized counts and never counts the index itself; the stats
-- task (daily, or `admin maintain stats`) is what moves them.
SELECT counts, as_of FROM stats_snapshots ORDER BY as_of DESC LIMIT 1

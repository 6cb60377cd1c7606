-- name: stats_snapshots_select_day
SELECT counts, as_of FROM stats_snapshots WHERE day = $1

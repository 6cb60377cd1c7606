-- name: maintenance_runs_select_metrics
-- /metrics: per task, when its newest run that finished started, and how the last run ended.
SELECT task,
       extract(epoch FROM last_success_at)::float8 AS last_success_seconds,
       last_result->>'status' AS last_status
  FROM maintenance_runs

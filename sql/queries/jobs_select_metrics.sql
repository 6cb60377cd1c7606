-- name: jobs_select_metrics
-- /metrics: jobs by status, and the age in seconds at $1 of the oldest pending one (null: none).
SELECT s.status,
       coalesce(count(j.id), 0)::integer AS jobs,
       CASE WHEN s.status = 'pending' THEN extract(epoch FROM $1::timestamptz - min(j.created_at))::float8 END AS oldest_age_seconds
  FROM (VALUES ('pending'), ('processing'), ('completed'), ('failed')) AS s(status)
  LEFT JOIN jobs j ON j.status = s.status
 GROUP BY s.status

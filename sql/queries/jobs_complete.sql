-- name: jobs_complete
-- Counts, debits once (key 'job:<id>') and completes, in one transaction (complete_job in 00005_jobs.sql).
SELECT completed, matched FROM complete_job($1, $2, $3)

-- name: maintenance_runs_select
-- The state of every task: whether a run holds it and when it last finished, for the scheduler
-- and for reporting why a run was skipped.
SELECT task, holder, lease_until, started_at, last_success_at, last_result FROM maintenance_runs ORDER BY task

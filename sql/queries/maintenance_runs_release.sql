-- name: maintenance_runs_release
-- Ends run $2 of task $1 and records its result $4; $3 says whether it finished its work, which
-- marks the task done as of the run's start. Only the holder can release.
UPDATE maintenance_runs
   SET holder = NULL, lease_until = NULL, last_result = $4::text::jsonb,
       last_success_at = CASE WHEN $3::boolean THEN started_at ELSE last_success_at END
 WHERE task = $1 AND holder = $2::uuid
RETURNING task

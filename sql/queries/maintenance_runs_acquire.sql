-- name: maintenance_runs_acquire
-- Takes the lease of task $1 for run $2 at $3 until $4, in one statement so two runs racing for
-- it cannot both win: only a row with no unexpired lease matches. With $5 set (a scheduled run)
-- the task must also not have succeeded since $5, so an instance that wakes after another one
-- finished the day's run finds nothing to do. Returns nothing when the lease was not taken.
UPDATE maintenance_runs
   SET holder = $2::uuid, lease_until = $4::timestamptz, started_at = $3::timestamptz
 WHERE task = $1
   AND (lease_until IS NULL OR lease_until <= $3::timestamptz)
   AND ($5::timestamptz IS NULL OR last_success_at IS NULL OR last_success_at < $5::timestamptz)
RETURNING task

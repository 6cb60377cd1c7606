-- name: maintenance_runs_renew
-- Moves run $2's lease of task $1 to $3. Returns nothing when the run no longer holds it (it
-- expired and another run took it): the caller must stop.
UPDATE maintenance_runs SET lease_until = $3::timestamptz
 WHERE task = $1 AND holder = $2::uuid
RETURNING task

-- The daily maintenance tasks (reachability re-check, stats materialization): a lease per task
-- so two instances never run the same task at once, and the re-check's daily count.

-- One row per task. A run takes the lease by moving `lease_until` into the future in a single
-- UPDATE, which only succeeds while no other run holds an unexpired lease; a run that dies
-- midway leaves a lease that expires on its own. A lease, not an advisory lock: advisory locks
-- belong to a session, and neither a pooled connection nor PGlite's single shared one is a
-- session a long task could hold without holding up everyone else.
CREATE TABLE maintenance_runs (
  task            text PRIMARY KEY CHECK (task IN ('reachability', 'stats')),
  holder          uuid,
  lease_until     timestamptz,
  started_at      timestamptz,
  -- start of the newest run that finished its work: the scheduler's "done for today"
  last_success_at timestamptz,
  last_result     jsonb,
  CHECK ((holder IS NULL) = (lease_until IS NULL))
);

INSERT INTO maintenance_runs (task) VALUES ('reachability'), ('stats');

-- Handles looked up against the X API per UTC day, written in the same transaction as the
-- results of each lookup, so the daily bound counts what an interrupted run already did.
CREATE TABLE reachability_check_days (
  day     date PRIMARY KEY,
  checked integer NOT NULL CHECK (checked >= 0)
);

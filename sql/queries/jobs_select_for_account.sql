-- name: jobs_select_for_account
-- A job as its own account sees it: another account's job is indistinguishable from none.
SELECT id, status, total, processed, stage, matched, created_at, started_at, completed_at
  FROM jobs
 WHERE id = $1 AND account_id = $2

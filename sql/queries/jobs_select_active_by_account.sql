-- name: jobs_select_active_by_account
-- The account's pending or processing job, if any (at most one: jobs_one_active_per_account).
SELECT id
  FROM jobs
 WHERE account_id = $1 AND status IN ('pending', 'processing')

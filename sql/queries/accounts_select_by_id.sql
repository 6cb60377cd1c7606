-- name: accounts_select_by_id
-- FOR UPDATE: callers that cap something per account (active keys) hold the row while they count.
SELECT id, email, free_allowance, has_account, unmetered, created_at
  FROM accounts
 WHERE id = $1
   FOR UPDATE

-- name: jobs_insert
-- The partial unique index allows one pending or processing job per account: a second
-- submission, from any process, inserts nothing and the caller reports the active one.
INSERT INTO jobs (id, account_id, key_id, status, total, created_at, started_at, lease_owner, lease_expires_at, attempts)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (account_id) WHERE status IN ('pending', 'processing') DO NOTHING
RETURNING id

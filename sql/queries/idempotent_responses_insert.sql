-- name: idempotent_responses_insert
-- The first response stored under an Idempotency-Key wins; later ones replay it.
INSERT INTO idempotent_responses (account_id, idem_key, request_hash, status, body, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (account_id, idem_key) DO UPDATE
   SET request_hash = excluded.request_hash, status = excluded.status, body = excluded.body,
       created_at = excluded.created_at
 WHERE idempotent_responses.created_at <= excluded.created_at - interval '24 hours'

-- name: idempotent_responses_complete
-- Stores the response of the request holding the Idempotency-Key's claim (token $3); later
-- requests with the key replay it for 24 hours. No row changes when the claim expired and
-- another request took it over: that one stores its own.
UPDATE idempotent_responses
   SET status = $4, body = $5, created_at = $6, claim_token = NULL, claimed_until = NULL
 WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND status IS NULL

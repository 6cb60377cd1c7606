-- name: idempotent_responses_release
-- Gives back the Idempotency-Key claim of a request that failed after metering (token $3):
-- the next request with the key runs instead of waiting for the claim to expire.
DELETE FROM idempotent_responses
 WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND status IS NULL

-- name: idempotent_responses_release
-- Gives back the Idempotency-Key claim of a request that failed after metering (token $3): the
-- next request with the key runs at once instead of waiting for the claim to expire. The row
-- stays, with the start of its attempt: the debit may already have committed, and the retry must
-- reproduce the same debit key (00020_idempotency_attempts.sql) rather than bill again.
UPDATE idempotent_responses
   SET claim_token = NULL, claimed_until = NULL
 WHERE account_id = $1 AND idem_key = $2 AND claim_token = $3 AND status IS NULL

-- name: x402_payments_record_outcome
-- Records what settlement answered for a claim still open ($2: failed, unknown or settled).
-- Never moves a row backwards: a granted payment stays granted.
UPDATE x402_payments
   SET state = $2, reason = $3, tx_hash = coalesce($4, tx_hash),
       settled_at = CASE WHEN $2 = 'settled' THEN $5::timestamptz ELSE settled_at END
 WHERE id = $1 AND state IN ('claimed', 'unknown')
RETURNING id

-- name: x402_calls_record_outcome
-- Records what became of a claimed call ($2: free, refused, failed, unknown or settled), or of an
-- unknown one once reconciled. Never moves a row backwards: settled, free, refused and failed are final.
-- Where no money moved (free, refused, failed) the commit does not wait for the WAL flush, like the
-- claim's; settled and unknown wait for it.
WITH async AS (
  SELECT CASE WHEN $2 IN ('free', 'refused', 'failed') THEN set_config('synchronous_commit', 'off', true) END AS ignored
)
UPDATE x402_calls
   SET state = $2, matches = coalesce($3, matches), amount = coalesce($4, amount), tx_hash = coalesce($5, tx_hash),
       reason = $6, settled_at = CASE WHEN $2 = 'settled' THEN $7::timestamptz ELSE settled_at END
  FROM async
 WHERE id = $1 AND state IN ('claimed', 'unknown')
RETURNING id, state, payer, route, matches, amount::text AS amount, tx_hash

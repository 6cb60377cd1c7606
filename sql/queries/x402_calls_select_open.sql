-- name: x402_calls_select_open
-- The paid calls whose settlement outcome is not known (state unknown, or claimed and older than
-- $1: its process stopped), oldest first: what an operator reconciles against the chain.
SELECT id, state, payer, route, max_amount::text AS max_amount, matches, amount::text AS amount, tx_hash, reason, claimed_at
  FROM x402_calls
 WHERE state = 'unknown' OR (state = 'claimed' AND claimed_at < $1)
 ORDER BY claimed_at
 LIMIT 1000

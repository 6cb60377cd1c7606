-- name: x402_calls_begin
-- Begins a call paid per call, in one round trip: claims its payment ($1 the call's id, $2-$5 the
-- replay key, $6 the signature, $7 pay_to, $8 the route, $9 the ceiling, at $10); then, only when
-- the claim is this call's, counts its rate units ($11, a list of $12) against the paying wallet
-- $4 (x402_payer_count in 00023_x402_calls.sql); then, only when that lets it through, reads the
-- identity rows of $13. No row: the payment was presented before (the unique replay key makes the
-- claim atomic across processes). Otherwise the windows on every row, with an identity row
-- (address null when there is none).
-- Its commit does not wait for the WAL flush, as metering's does not (00003_metering.sql): a
-- database crash can lose the last fraction of a second of claims and counts. A payment whose
-- claim was lost can run one call more, but settles at most once: its Permit2 nonce is spent on
-- chain by the first settlement, so the second answers 402 and returns nothing, unless it is a
-- miss, which costs nothing anyway.
WITH async AS (
  SELECT set_config('synchronous_commit', 'off', true)
), claimed AS (
  INSERT INTO x402_calls (id, network, asset, payer, nonce, signature, pay_to, route, max_amount, state, claimed_at)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 'claimed', $10 FROM async
      ON CONFLICT (network, asset, payer, nonce) DO NOTHING
  RETURNING id
), counted AS (
  SELECT c.* FROM claimed CROSS JOIN LATERAL x402_payer_count($4, $10, $11, $12) c
)
SELECT n.outcome, n.limit_minute, n.limit_day, n.limit_month, n.max_batch_size, n.used_minute, n.used_day, n.used_month, r.*
  FROM counted n
  LEFT JOIN LATERAL identity_rows(CASE WHEN n.outcome = 'ok' AND $11::integer > 0 THEN $13::text[] ELSE '{}'::text[] END) r ON true

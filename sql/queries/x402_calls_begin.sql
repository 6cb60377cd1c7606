-- name: x402_calls_begin
-- Begins a call paid per call, in one round trip: claims its payment ($1 the call's id, $2-$5 the
-- replay key, $6 the signature, $7 pay_to, $8 the route, $9 the ceiling, at $10); then, only when
-- the claim is this call's, counts its rate units ($11, a list of $12) against the paying wallet
-- $4 (x402_payer_count in 00023_x402_calls.sql); then, only when that lets it through, reads the
-- identity rows of $13. No row: the payment was presented before (the unique replay key makes the
-- claim atomic across processes). Otherwise the windows on every row, with an identity row
-- (address null when there is none).
-- It runs beside the facilitator's verification, not after it (src/operations/percall.ts), so its
-- round trip and its commit are off the call's path; a payment the facilitator then refuses gives
-- its claim and its units back (x402_calls_release). Its commit waits for the WAL flush: the claim
-- is durable before any settlement, so a call settled and answered whose outcome row a crash then
-- lost is still here, `claimed`, for reconciliation (x402_calls_select_open).
WITH claimed AS (
  INSERT INTO x402_calls (id, network, asset, payer, nonce, signature, pay_to, route, max_amount, state, claimed_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'claimed', $10)
      ON CONFLICT (network, asset, payer, nonce) DO NOTHING
  RETURNING id
), counted AS (
  SELECT c.* FROM claimed CROSS JOIN LATERAL x402_payer_count($4, $10, $11, $12) c
)
SELECT n.outcome, n.limit_minute, n.limit_day, n.limit_month, n.max_batch_size, n.used_minute, n.used_day, n.used_month, r.*
  FROM counted n
  LEFT JOIN LATERAL identity_rows(CASE WHEN n.outcome = 'ok' AND $11::integer > 0 THEN $13::text[] ELSE '{}'::text[] END) r ON true

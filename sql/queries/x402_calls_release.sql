-- name: x402_calls_release
-- Gives back the claim of a paid call whose payment the facilitator did not verify ($1 the call's
-- id): the row goes, so that the same payment may be presented again (a refused payment moved
-- nothing; a facilitator that was down may verify it next time), and the $2 rate units its claim
-- counted against the paying wallet are given back in the windows the claim fell in. The claim runs
-- beside the verification (x402_calls_begin), so a payload nobody signed holds a wallet's units only
-- until its verification fails. No row: the call was not claimed, or is past `claimed`.
WITH gone AS (
  DELETE FROM x402_calls WHERE id = $1 AND state = 'claimed'
  RETURNING payer, claimed_at
), refund AS (
  UPDATE x402_payer_windows w
     SET minute_used = CASE WHEN w.minute_start = date_trunc('minute', g.claimed_at, 'UTC') THEN greatest(0, w.minute_used - $2::integer) ELSE w.minute_used END,
         day_used = CASE WHEN w.day_start = date_trunc('day', g.claimed_at, 'UTC') THEN greatest(0, w.day_used - $2::integer) ELSE w.day_used END,
         month_used = CASE WHEN w.month_start = date_trunc('month', g.claimed_at, 'UTC') THEN greatest(0, w.month_used - $2::integer) ELSE w.month_used END
    FROM gone g
   WHERE w.payer = g.payer AND $2::integer > 0
  RETURNING w.payer
)
SELECT payer FROM gone

-- name: meter_call
-- Key check, Idempotency-Key claim, plan, balance, rate windows and debit (meter_call in
-- 00009_claims_and_attempts.sql), and, when the call is let through, the identity rows of $12: a
-- metered lookup is one round trip. The first row carries the metering outcome; identity
-- columns are null when nothing is found. Opted-out wallets (00021_opt_outs.sql) are left out of
-- the bill list $7, as identity_rows leaves them out of $12: never billed, never shown.
SELECT m.*, r.*
  FROM meter_call($1, $2, $3, $4, $5, $6,
                  (SELECT array_agg(b.wallet ORDER BY b.n)
                     FROM unnest($7::text[]) WITH ORDINALITY AS b (wallet, n)
                    WHERE NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = b.wallet)),
                  $8, $9, $10, $11) m
  LEFT JOIN LATERAL identity_rows(CASE WHEN m.outcome = 'ok' THEN $12::text[] END) r ON true

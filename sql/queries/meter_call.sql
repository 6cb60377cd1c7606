-- name: meter_call
-- Key check, Idempotency-Key claim, plan, balance, rate windows and debit (meter_call in
-- 00009_claims_and_attempts.sql), and, when the call is let through, the identity rows of $12: a
-- metered lookup is one round trip. The first row carries the metering outcome; identity
-- columns are null when nothing is found.
SELECT m.*, r.*
  FROM meter_call($1, $2, $3, $4, $5, $6, $7::text[], $8, $9, $10, $11) m
  LEFT JOIN LATERAL identity_rows(CASE WHEN m.outcome = 'ok' THEN $12::text[] END) r ON true

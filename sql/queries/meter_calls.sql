-- name: meter_calls
-- A group of calls metered in one statement and one commit (meter_calls in
-- 00011_group_metering.sql), and the identity rows of each call let through: $9 holds each call's
-- addresses comma-joined (0x-hex never holds a comma), so splitting it is an expression of the
-- outer row and the wallets primary key serves each call's lookup. Every call has its first row
-- carrying the outcome; identity columns are null when nothing is found.
SELECT m.*, r.*
  FROM meter_calls($1, $2, $3::text[], $4::integer[], $5::boolean[], $6::integer[], $7::integer[], $8::text[]) m
  LEFT JOIN LATERAL identity_rows(CASE WHEN m.outcome = 'ok' THEN string_to_array(($9::text[])[m.call_ix], ',') END) r ON true

-- name: meter_calls
-- A group of calls metered in one statement and one commit (meter_calls in
-- 00011_group_metering.sql), identity rows included: $9 holds each call's addresses comma-joined.
-- Per call, its identity rows (outcome null) and one row carrying its metering outcome.
SELECT *
  FROM meter_calls($1, $2, $3::text[], $4::integer[], $5::boolean[], $6::integer[], $7::integer[], $8::text[], $9::text[])

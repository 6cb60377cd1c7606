-- name: meter_calls
-- A group of calls metered in one statement and one commit (meter_calls in
-- 00011_group_metering.sql, now 00017_meter_calls_counted.sql), identity rows included: $9 holds
-- each call's addresses comma-joined, $10 the billable matches a caller counted itself (or null).
-- Per call, its identity rows (outcome null) and one row carrying its metering outcome.
SELECT *
  FROM meter_calls($1, $2, $3::text[], $4::integer[], $5::boolean[], $6::integer[], $7::integer[], $8::text[], $9::text[], $10::integer[])

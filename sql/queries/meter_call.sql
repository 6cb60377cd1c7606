-- name: meter_call
-- Key check, plan, balance, rate windows and debit in one round trip; see 00003_metering.sql.
SELECT * FROM meter_call($1, $2, $3, $4, $5, $6, $7::text[], $8)

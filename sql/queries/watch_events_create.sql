-- name: watch_events_create
-- The wallet.changed events, debits and deliveries of one pass (watch_events_create in
-- 00028_watch_events_lean.sql): $1 the pass's wallets; $2 the events as JSON text,
-- [[wallet, body, withheld body, billable], ...], the same wallets in the same order.
SELECT watch_events_create($1::text[], $2::text, $3::timestamptz) AS events

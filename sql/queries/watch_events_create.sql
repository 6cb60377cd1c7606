-- name: watch_events_create
-- The wallet.changed events, debits and deliveries of one pass (watch_events_create in
-- 00027_watch_events_bulk.sql): $1 the events as JSON text, [[wallet, body, withheld body, billable], ...].
SELECT watch_events_create($1::text, $2::timestamptz) AS events

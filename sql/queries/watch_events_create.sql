-- name: watch_events_create
-- The wallet.changed events, debits and deliveries of one pass (watch_events_create in 00022_webhooks.sql).
SELECT watch_events_create($1::text[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz) AS events

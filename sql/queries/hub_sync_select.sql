-- name: hub_sync_select
-- Where the backfill and the follower stand (event ids as text: they do not fit 32 bits, nor
-- always a double), for the follower, the admin command and /metrics.
SELECT hub_url, start_event_id::text, backfill_started_at, backfill_done_at, last_event_id::text,
       head_event_id::text, head_seen_at, holder, lease_until
  FROM hub_sync WHERE name = 'farcaster'

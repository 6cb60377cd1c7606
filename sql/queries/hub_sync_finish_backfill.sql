-- name: hub_sync_finish_backfill
-- Marks holder $1's backfill done at $2. A follower that never ran starts after the backfill's
-- start event; one that already ran keeps its place (replaying from there is safe: events apply in order).
UPDATE hub_sync
   SET backfill_done_at = $2::timestamptz, last_event_id = coalesce(last_event_id, start_event_id)
 WHERE name = 'farcaster' AND holder = $1::uuid
RETURNING last_event_id::text
